"""``agentclash run --repeats``, ``ci run --repeats`` and ``evaluation.repeats`` in ci.yaml (docs/ci.md)."""

from __future__ import annotations

import argparse
import datetime as dt
import json
from typing import cast

import pytest
from agentclash_cli import main as cli_main
from agentclash_cli.ci import find_recent_baseline
from agentclash_cli.client import Client
from agentclash_cli.runs import progress_line

from runs.models import CaseRun, Run

from .live import GOOD, SLOPPY
from .test_run_gate_ci import PACK, write_manifest


@pytest.mark.django_db(transaction=True)
def test_run_repeats_starts_every_case_that_many_times(cli, demo, captured_tasks):
    result = cli("run", "--pack", PACK, "--deployment", GOOD, "--repeats", "3", "--json")
    assert result.code == 0, result
    body = json.loads(result.out)
    assert body["repeats"] == 3 and body["case_counts"]["total"] == 9
    run = Run.objects.get(pk=body["id"])
    assert run.repeats == 3
    assert sorted(set(CaseRun.objects.filter(run=run).values_list("trial", flat=True))) == [1, 2, 3]


@pytest.mark.django_db(transaction=True)
def test_run_repeats_auto_with_max_repeats_starts_an_adaptive_run(cli, demo, captured_tasks):
    result = cli("run", "--pack", PACK, "--deployment", GOOD, "--deployment", SLOPPY, "--repeats", "auto", "--max-repeats", "6", "--json")
    assert result.code == 0, result
    run = Run.objects.get(pk=json.loads(result.out)["id"])
    assert run.is_adaptive and run.max_repeats == 6 and run.repeats == 2


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--repeats", "0"], "--repeats: must be an integer from 1 to 50, or auto (got 0)"),
        (["--repeats", "x"], "--repeats: must be an integer from 1 to 50, or auto (got 'x')"),
        (["--repeats", "auto"], "max_repeats"),
        (["--repeats", "auto", "--max-repeats", "5"], "at least two deployments"),
    ],
)
def test_run_refuses_bad_repeats_and_starts_nothing(cli, demo, captured_tasks, args, message):
    result = cli("run", "--pack", PACK, "--deployment", GOOD, *args)
    assert result.code == 4, result
    assert message in result.err
    assert not Run.objects.exists()


@pytest.mark.parametrize(
    ("repeats", "message"),
    [
        (0, "evaluation.repeats must be an integer from 1 to 50"),
        (51, "evaluation.repeats must be an integer from 1 to 50"),
        ("auto", '"auto" is not available in ci'),
        (True, "evaluation.repeats must be an integer from 1 to 50"),
    ],
)
def test_ci_validate_checks_evaluation_repeats(offline_cli, tmp_path, repeats, message):
    manifest = write_manifest(tmp_path, evaluation={"pack": PACK, "input_set": "default", "repeats": repeats})
    result = offline_cli("ci", "validate", "--config", str(manifest))
    assert result.code == 4, result
    assert message in result.err


def test_ci_repeats_come_from_the_manifest_and_the_flag_overrides_them(tmp_path):
    manifest = write_manifest(tmp_path, evaluation={"pack": PACK, "input_set": "default", "repeats": 4})
    args = argparse.Namespace(config=str(manifest), output=None, judge_deployment=None, allow_missing_judges=None, repeats=None)
    assert cli_main._ci_config(args).repeats == 4
    args.repeats = "7"
    assert cli_main._ci_config(args).repeats == 7
    args.repeats = "auto"
    with pytest.raises(Exception, match="--repeats"):
        cli_main._ci_config(args)


class _RunsOnly:
    def __init__(self, runs: list[dict]) -> None:
        self.runs = runs

    def ws(self, path: str) -> str:
        return path

    def paginate(self, url: str, **params: object):
        return iter(self.runs)


def test_a_recent_baseline_must_have_the_same_repeats():
    now = dt.datetime.now(dt.UTC).isoformat()
    shape = {"pack_version_id": 5, "input_set_id": 6, "lanes": [{"deployment_id": 7}], "created_at": now, "finished_at": now}
    five, older = {"id": 12, "repeats": 5, **shape}, {"id": 11, **shape}  # older: a server without trials
    client = cast(Client, _RunsOnly([five, older]))
    common = {"pack_id": 1, "version_id": 5, "input_set_id": 6, "deployment_id": 7, "max_age_days": 7}
    assert find_recent_baseline(client, **common, repeats=5) is five
    assert find_recent_baseline(client, **common) is older
    assert find_recent_baseline(client, **common, repeats=3) is None


def test_the_progress_line_counts_case_runs_when_cases_repeat():
    counts = {"total": 6, "completed": 2}
    assert progress_line({"id": 1, "status": "running", "case_counts": counts}).endswith("2/6 cases · running")
    assert "2/6 case runs · round 2 · running" in progress_line(
        {"id": 1, "status": "running", "case_counts": counts, "repeats": "auto", "rounds": 2}
    )


def test_junit_names_each_trial_apart():
    from agentclash_cli import junit

    cases = [
        {"case_key": "small", "trial": 1, "passed": True, "status": "completed"},
        {"case_key": "small", "trial": 2, "passed": False, "status": "completed", "score": 0.0},
        {"case_key": "large", "passed": True, "status": "completed"},  # a server without trials
    ]
    element = junit.suite(name="lane", classname="pack.lane", cases=cases)
    names = [testcase.get("name") for testcase in element.iter("testcase")]
    assert names == ["small", "small (trial 2)", "large"]
    assert element.get("failures") == "1"


class _Cases:
    """A client whose run has ``cases``, recording the promotions it is asked for."""

    def __init__(self, cases: list[dict]) -> None:
        self.cases = cases
        self.posted: list[str] = []

    def ws(self, path: str) -> str:
        return path

    def paginate(self, url: str, **params: object):
        return iter(self.cases)

    def post(self, url: str, body: dict) -> dict:
        self.posted.append(url)
        return {"url": url}


def test_a_case_that_fails_in_several_trials_is_proposed_once():
    from agentclash_cli.suites import propose_failures

    cases = [
        {"id": 1, "case_key": "small", "trial": 1, "passed": False, "status": "completed"},
        {"id": 2, "case_key": "small", "trial": 2, "passed": False, "status": "completed"},
        {"id": 3, "case_key": "large", "trial": 1, "passed": True, "status": "completed"},
        {"id": 4, "case_key": "large", "trial": 2, "passed": None, "status": "failed"},
    ]
    client = _Cases(cases)
    propose_failures(cast(Client, client), run_id=9, lane_id=3, suite_id=5)
    assert client.posted == ["runs/9/cases/1/promote", "runs/9/cases/4/promote"]


@pytest.mark.django_db(transaction=True)
def test_run_passes_the_rounds_gate_policy(cli, demo, captured_tasks):
    args = ("run", "--pack", PACK, "--deployment", GOOD, "--deployment", SLOPPY, "--repeats", "auto", "--max-repeats", "6")
    result = cli(*args, "--max-regression", "0.1", "--confidence", "0.9", "--json")
    assert result.code == 0, result
    run = Run.objects.get(pk=json.loads(result.out)["id"])
    assert (run.round_max_regression, run.round_confidence) == (0.1, 0.9)
    refused = cli(*args, "--confidence", "0.3")
    assert refused.code == 4 and "confidence must be from 0.5 to below 1" in refused.err
    assert Run.objects.count() == 1

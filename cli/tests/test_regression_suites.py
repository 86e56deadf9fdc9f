"""``agentclash run --suite`` and ``ci run`` with suites and promotion, against a live server and a real worker."""

from __future__ import annotations

import json

import pytest

from regression.models import RegressionCase
from regression.services import regression_case_promote, regression_case_set_status, regression_suite_create
from runs.models import CaseRun, Run

from .live import GOOD, SLOPPY
from .test_run_gate_ci import PACK, start, write_manifest

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

REGRESSION_POLICY = {
    "policy_key": "ci-regressions", "required_dimensions": "declared", "max_case_regressions": 0,
    "dimension_defaults": {"*": {"warn_delta": 0.02, "fail_delta": 0.05}},
    "regression_gate_rules": {"no_blocking_regression_failure": True, "no_new_blocking_failure_vs_baseline": True},
}  # fmt: skip


@pytest.fixture
def smoke(cli, demo, workspace, admin, worker_queue) -> RegressionCase:
    """Suite ``smoke`` of the demo pack with one active case: the sloppy agent's wrong sum of ``large``."""
    sloppy = start(cli, SLOPPY)
    suite = regression_suite_create(workspace=workspace, user=admin, pack=demo.pack, name="smoke")
    failed = CaseRun.objects.get(run_id=sloppy, case_key="large")
    assert failed.passed is False
    case, _ = regression_case_promote(workspace=workspace, user=admin, case_run=failed, suite=suite)
    return regression_case_set_status(case=case, user=admin, status="active")


def test_run_with_a_suite_runs_its_active_cases_too(cli, smoke):
    result = cli("run", "--pack", PACK, "--deployment", GOOD, "--suite", "smoke", "--follow", "--poll", "0.2")
    assert result.code == 0, result
    run = Run.objects.get(pk=int(result.out.strip()))
    rows = {c.case_key: c for c in run.case_runs.all()}
    assert set(rows) == {"small", "negative", "large", f"regression/{smoke.pk}/large"}
    assert rows[f"regression/{smoke.pk}/large"].regression_case_id == smoke.pk
    assert rows[f"regression/{smoke.pk}/large"].passed is True, "the good agent answers the promoted case as its source case"
    unknown = cli("run", "--pack", PACK, "--deployment", GOOD, "--suite", "nightly")
    assert unknown.code == 4 and "no regression suite 'nightly' (suites: smoke)" in unknown.err


def test_ci_run_gates_on_the_suite_and_proposes_the_candidates_failures(cli, smoke, tmp_path):
    evaluation = {"pack": PACK, "input_set": "default", "suites": ["smoke"]}
    manifest = write_manifest(
        tmp_path, evaluation=evaluation, gate={"policy": REGRESSION_POLICY}, promotion={"policy": "proposed", "suite": "smoke"}
    )
    regressed = cli("ci", "run", "--config", str(manifest), "--poll", "0.2")
    assert regressed.code == 1, regressed
    result = json.loads((tmp_path / "out" / "result.json").read_text())
    assert (result["verdict"], result["reason_code"]) == ("fail", "regression_blocking_failure")
    gate = json.loads((tmp_path / "out" / "gate.json").read_text())
    rule = next(c for c in gate["triggered_conditions"] if c["condition"] == "no_blocking_regression_failure")
    assert rule["cases"] == [str(smoke.pk)]
    candidate = Run.objects.get(pk=result["candidate"]["run_id"])
    assert candidate.case_runs.filter(regression_case=smoke).count() == 1
    proposed = RegressionCase.objects.filter(suite=smoke.suite, status="proposed")
    assert result["promotion"] == {"policy": "proposed", "proposed": proposed.count()} and proposed.count() >= 1
    assert set(proposed.values_list("source_run_id", flat=True)) == {candidate.pk}
    assert not proposed.filter(source_case_run__regression_case__isnull=False).exists(), "a regression case is not promoted again"

    good = cli("ci", "run", "--config", str(write_manifest(tmp_path, evaluation=evaluation, gate={"policy": REGRESSION_POLICY},
                                                           candidate={"deployment": GOOD})), "--poll", "0.2")  # fmt: skip
    assert good.code == 0, good
    assert json.loads((tmp_path / "out" / "result.json").read_text())["verdict"] == "pass"

"""``agentclash run | gate | ci run`` against a live server, with a real Celery worker executing
the runs (the demo prompt-eval pack and its scripted good and sloppy agents)."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import cast

import pytest
import yaml
from agentclash_cli.ci import find_recent_baseline
from agentclash_cli.client import Client

from comparisons.models import Comparison, GateResult
from runs.models import Run, RunArtifact, RunStatus

from .live import GOOD, SLOPPY

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

PACK = "demo-prompt-eval@1"


def start(cli, deployment: str) -> int:
    result = cli("run", "--pack", PACK, "--deployment", deployment, "--input-set", "default", "--follow", "--poll", "0.2")
    assert result.code == 0, result
    return int(result.out.strip())


def test_run_follows_a_run_to_completion_and_exits_0(cli, demo, worker_queue):
    result = cli("run", "--pack", "demo-prompt-eval", "--deployment", GOOD, "--follow", "--poll", "0.2")
    assert result.code == 0, result
    run = Run.objects.get(pk=int(result.out.strip()))
    assert run.status == RunStatus.COMPLETED
    assert run.pack_version == demo
    assert f"run {run.pk} [" in result.err and "3/3 cases · completed" in result.err


def test_run_without_follow_prints_the_id_at_once(cli, demo, worker_queue):
    result = cli("run", "--pack", PACK, "--deployment", GOOD, "--deployment", SLOPPY, "--json")
    assert result.code == 0, result
    body = json.loads(result.out)
    assert [lane["deployment_name"] for lane in body["lanes"]] == [GOOD, SLOPPY]
    assert Run.objects.filter(pk=body["id"]).exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--pack", "no-such-pack", "--deployment", GOOD], "no pack 'no-such-pack' in workspace 'acme'"),
        (["--pack", "demo-prompt-eval@7", "--deployment", GOOD], "has no version 7 (versions: 1)"),
        (["--pack", PACK, "--deployment", "Nobody"], "no deployment named 'Nobody'"),
        (["--pack", PACK, "--deployment", GOOD, "--input-set", "nope"], "has no input set 'nope' (input sets: default)"),
        (["--pack", "demo@x", "--deployment", GOOD], "version must be a number"),
        (["--pack", PACK, "--deployment", GOOD, "--suite", "smoke"], "no regression suite 'smoke' (suites: none)"),
    ],
)
def test_run_usage_errors_exit_4_and_start_nothing(cli, demo, args, message):
    result = cli("run", *args)
    assert result.code == 4, result
    assert message in result.err
    assert not Run.objects.exists()


def test_run_without_configuration_says_what_to_set(cli, monkeypatch):
    monkeypatch.delenv("AGENTCLASH_TOKEN")
    result = cli("run", "--pack", PACK, "--deployment", GOOD)
    assert result.code == 4
    assert "set AGENTCLASH_TOKEN" in result.err


def test_gate_exit_codes_json_out_and_step_summary(cli, demo, worker_queue, tmp_path, monkeypatch):
    good, again, sloppy = start(cli, GOOD), start(cli, GOOD), start(cli, SLOPPY)
    summary = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))

    passed = cli("gate", "--baseline", str(good), "--candidate", str(again), "--json-out", str(tmp_path / "pass.json"))
    assert passed.code == 0, passed
    assert passed.out.startswith("verdict: pass\n")
    assert json.loads((tmp_path / "pass.json").read_text())["verdict"] == "pass"

    failed = cli("gate", "--baseline", str(good), "--candidate", str(sloppy), "--json-out", str(tmp_path / "fail.json"))
    assert failed.code == 1, failed
    written = json.loads((tmp_path / "fail.json").read_text())
    assert (written["verdict"], written["exit_code"]) == ("fail", 1)
    gate = GateResult.objects.get(pk=written["gate"]["id"])
    assert gate.verdict == "fail"
    assert written["comparison"]["id"] == gate.comparison_id
    markdown = summary.read_text()
    assert "## AgentClash release gate: ✅ pass" in markdown
    assert "## AgentClash release gate: ❌ fail" in markdown
    assert "| `correctness` |" in markdown
    assert f"/w/acme/runs/{sloppy}/" in markdown


def test_gate_usage_errors_exit_4(cli, demo, worker_queue, tmp_path):
    good = start(cli, GOOD)
    missing = cli("gate", "--baseline", str(good), "--candidate", "999999")
    assert missing.code == 4
    assert "no candidate run 999999" in missing.err
    bad_policy = tmp_path / "policy.yaml"
    bad_policy.write_text("max_case_regressions: -1\nwhatever: 1\n")
    invalid = cli("gate", "--baseline", str(good), "--candidate", str(good), "--policy", str(bad_policy))
    assert invalid.code == 4, invalid
    unreadable = cli("gate", "--baseline", str(good), "--candidate", str(good), "--policy", str(tmp_path / "nope.yaml"))
    assert unreadable.code == 4
    assert "cannot read policy file" in unreadable.err
    assert cli("gate", "--baseline", "x", "--candidate", "1").code == 4  # argparse errors are usage errors too
    assert not GateResult.objects.exists()


def write_manifest(folder: Path, **overrides) -> Path:
    manifest = {
        "version": 1,
        "candidate": {"deployment": SLOPPY},
        "evaluation": {"pack": PACK, "input_set": "default"},
        "baseline": {"deployment": GOOD, "max_age_days": 7},
        "gate": {"policy": {"policy_key": "ci", "required_dimensions": "declared", "max_case_regressions": 0,
                            "dimension_defaults": {"*": {"warn_delta": 0.02, "fail_delta": 0.05}}}},
        "promotion": {"policy": "disabled"},
        "output": str(folder / "out"),
    }  # fmt: skip
    for key, value in overrides.items():
        manifest[key] = value
    path = folder / ".agentclash" / "ci.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(manifest, sort_keys=False))
    return path


def test_ci_run_exits_1_for_a_regressed_candidate_and_0_for_a_good_one(cli, demo, worker_queue, tmp_path, monkeypatch):
    summary = tmp_path / "step-summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    monkeypatch.setenv("GITHUB_SHA", "0123456789abcdef")
    monkeypatch.setenv("GITHUB_REPOSITORY", "acme/agent")

    regressed = cli("ci", "run", "--config", str(write_manifest(tmp_path)), "--poll", "0.2")
    assert regressed.code == 1, regressed
    out = tmp_path / "out"
    result = json.loads((out / "result.json").read_text())
    assert (result["verdict"], result["exit_code"]) == ("fail", 1)
    candidate = Run.objects.get(pk=result["candidate"]["run_id"])
    baseline = Run.objects.get(pk=result["baseline"]["run_id"])
    assert candidate.name == f"ci candidate: {SLOPPY} (acme/agent@01234567)"
    assert baseline.name == f"ci baseline: {GOOD} (acme/agent@01234567)"  # none recent: the baseline ran too
    assert json.loads((out / "run.json").read_text())["id"] == candidate.pk
    assert json.loads((out / "scorecard.json").read_text())["run_id"] == candidate.pk
    assert json.loads((out / "comparison.json").read_text())["id"] == result["comparison_id"] == Comparison.objects.get().pk
    assert json.loads((out / "gate.json").read_text())["verdict"] == "fail"
    assert (out / "summary.md").read_text() in summary.read_text()
    attached = set(RunArtifact.objects.filter(run=candidate).values_list("artifact__name", flat=True))
    assert attached == {f"run-{candidate.pk}-events.jsonl", f"run-{candidate.pk}-scorecard.json"}
    assert [a["name"] for a in result["artifacts"]] == sorted(attached, key=lambda n: not n.endswith(".jsonl"))

    good = cli("ci", "run", "--config", str(write_manifest(tmp_path, candidate={"deployment": GOOD})), "--poll", "0.2")
    assert good.code == 0, good
    result = json.loads((out / "result.json").read_text())
    assert result["verdict"] == "pass"
    assert result["baseline"]["run_id"] == baseline.pk, "a recent baseline run of the deployment is reused"
    assert Run.objects.count() == 3


def test_ci_run_with_a_fixed_baseline_run(cli, demo, worker_queue, tmp_path):
    baseline = start(cli, GOOD)
    manifest = write_manifest(tmp_path, baseline={"run": baseline}, candidate={"deployment": GOOD}, gate={})
    result = cli("ci", "run", "--config", str(manifest), "--output", str(tmp_path / "elsewhere"), "--poll", "0.2")
    assert result.code == 0, result
    assert json.loads((tmp_path / "elsewhere" / "result.json").read_text())["baseline"]["run_id"] == baseline


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"evaluation": {"pack": PACK, "suites": ["smoke"]}}, "no regression suite 'smoke' (suites: none)"),
        ({"promotion": {"policy": "proposed", "suite": "smoke"}}, "no regression suite 'smoke' (suites: none)"),
        ({"baseline": {"deployment": GOOD, "refresh": "never"}}, "no completed run of 'Good agent (prompt eval)'"),
        ({"baseline": {"run": 999999}}, "baseline.run 999999 is not a run of 'acme'"),
        ({"candidate": {"deployment": "Nobody"}}, "no deployment named 'Nobody'"),
    ],
)
def test_ci_run_setup_problems_exit_4(cli, demo, tmp_path, overrides, message):
    result = cli("ci", "run", "--config", str(write_manifest(tmp_path, **overrides)))
    assert result.code == 4, result
    assert message in result.err
    assert not GateResult.objects.exists()


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"baseline": {"run": 1, "deployment": GOOD}}, "baseline needs exactly one of run or deployment"),
        ({"baseline": {"deployment": GOOD, "max_age_days": 0}}, "baseline.max_age_days must be a positive number"),
        ({"promotion": {"policy": "auto"}}, "promotion.policy must be one of disabled, proposed"),
        ({"promotion": {"policy": "proposed"}}, "promotion.policy proposed needs promotion.suite"),
        ({"candidate": {"deploymnt": GOOD}}, "candidate.deploymnt is not a known field"),
        ({"evaluation": {}}, "evaluation.pack is required"),
        ({"gate": {"policy": 3}}, "gate.policy must be a file path or a policy mapping"),
    ],
)
def test_ci_validate_names_the_field_that_is_wrong(cli, tmp_path, overrides, message):
    result = cli("ci", "validate", "--config", str(write_manifest(tmp_path, **overrides)))
    assert result.code == 4, result
    assert message in result.err


def test_ci_validate_accepts_a_good_manifest_and_reports_a_missing_one(cli, tmp_path):
    ok = cli("ci", "validate", "--config", str(write_manifest(tmp_path)))
    assert ok.code == 0, ok
    missing = cli("ci", "validate", "--config", str(tmp_path / "none.yaml"))
    assert missing.code == 4
    assert "cannot read" in missing.err


class _RunsOnly:
    """A client whose only runs are ``runs`` (newest first), for the baseline search."""

    def __init__(self, runs: list[dict]) -> None:
        self.runs = runs

    def ws(self, path: str) -> str:
        return path

    def paginate(self, url: str, **params: object):
        return iter(self.runs)


def test_the_recent_baseline_is_never_the_candidate_run_itself():
    now = dt.datetime.now(dt.UTC).isoformat()
    shape = {"pack_version_id": 5, "input_set_id": 6, "lanes": [{"deployment_id": 7}], "created_at": now, "finished_at": now}
    candidate, earlier = {"id": 12, **shape}, {"id": 11, **shape}
    found = find_recent_baseline(
        cast(Client, _RunsOnly([candidate, earlier])),
        pack_id=1,
        version_id=5,
        input_set_id=6,
        deployment_id=7,
        max_age_days=7,
        exclude_run_id=12,
    )
    assert found is earlier
    alone = cast(Client, _RunsOnly([candidate]))
    assert find_recent_baseline(alone, pack_id=1, version_id=5, input_set_id=6, deployment_id=7, max_age_days=7, exclude_run_id=12) is None
    assert find_recent_baseline(alone, pack_id=1, version_id=5, input_set_id=6, deployment_id=7, max_age_days=7) is candidate

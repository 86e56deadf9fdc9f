"""``agentclash gate`` on runs with trials (issue 24): it prints the interval and the trials behind the
verdict, in text, ``--json`` and JUnit, against a live server (runs built and scored directly)."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest

from scoring.tests.factories import make_pack_version, make_run

pytestmark = [pytest.mark.django_db(transaction=True)]

ANSWERS = {f"c{i}": str(i) for i in range(10)}


def _trials(right: int, trials: int = 4) -> dict[str, list[str]]:
    return {key: [answer if t < right else "wrong" for t in range(trials)] for key, answer in ANSWERS.items()}


@pytest.fixture
def lenient(tmp_path):
    path = tmp_path / "policy.yaml"
    path.write_text("max_regression: 0.2\n")
    return str(path)


def test_gate_prints_the_interval_and_trials_behind_a_fail(cli, server, workspace, lenient, tmp_path):
    version = make_pack_version(workspace, answers=ANSWERS)
    baseline = make_run(workspace, pack_version=version, lanes=[_trials(4)])
    candidate = make_run(workspace, pack_version=version, lanes=[_trials(1)])
    junit = tmp_path / "gate.xml"
    result = cli("gate", "--baseline", str(baseline.pk), "--candidate", str(candidate.pk), "--policy", lenient, "--junit", str(junit))
    assert result.code == 1, result
    assert "verdict: fail\n" in result.out
    assert "trials: 4 per case, paired case by case (95% confidence, tolerated drop 0.2)" in result.out
    assert "  pass_rate: candidate 0.250 vs baseline 1.000, change -0.750 (97.5% interval" in result.out
    root = ET.parse(junit).getroot()
    for suite in root.iter("testsuite"):  # 10 cases × 4 trials, each its own test case
        names = [c.get("name") for c in suite.iter("testcase")]
        assert len(names) == 40 and len(set(names)) == 40 and "c3 (trial 2)" in names
    # The trials decided: no case is marked as a regression on one flaky flip.
    assert not [f for f in root.iter("failure") if "regressed" in (f.get("message") or "")]
    properties = {p.get("name"): p.get("value") for p in root.iter("property")}
    assert properties["trials_per_case"] == "4" and properties["pass_rate_decision"] == "fail"
    assert properties["pass_rate_change"] == "-0.7500" and " to " in properties["pass_rate_interval"]


def test_gate_json_carries_the_statistics_and_the_trials_that_would_decide(cli, server, workspace, lenient):
    version = make_pack_version(workspace, answers=ANSWERS)
    baseline = make_run(workspace, pack_version=version, lanes=[_trials(4)])
    candidate = make_run(workspace, pack_version=version, lanes=[_trials(3)])
    result = cli("gate", "--baseline", str(baseline.pk), "--candidate", str(candidate.pk), "--policy", lenient, "--format", "json")
    assert result.code == 3, result
    body = json.loads(result.out)
    assert body["verdict"] == "insufficient_evidence" and body["statistics"]["trials_per_case"] == 4
    more = body["statistics"]["more_trials_per_case"]
    assert isinstance(more, int) and more >= 1
    assert f"  about {more} more trial(s) per case would likely decide" in body["gate"]["trials_text"]


def test_gate_on_one_trial_says_it_had_one_trial(cli, server, workspace):
    version = make_pack_version(workspace, answers=ANSWERS)
    baseline = make_run(workspace, pack_version=version, lanes=[ANSWERS])
    candidate = make_run(workspace, pack_version=version, lanes=[{**ANSWERS, "c3": "wrong"}])
    result = cli("gate", "--baseline", str(baseline.pk), "--candidate", str(candidate.pk))
    assert result.code == 1, result
    assert "reason: case_regression" in result.out
    assert "trials: 1 trial per case: decided by the rules for one trial" in result.out


def test_the_step_summary_shows_the_trials_behind_the_verdict(cli, server, workspace, lenient, tmp_path, monkeypatch):
    version = make_pack_version(workspace, answers=ANSWERS)
    baseline = make_run(workspace, pack_version=version, lanes=[_trials(4)])
    candidate = make_run(workspace, pack_version=version, lanes=[_trials(4)])
    summary = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    result = cli("gate", "--baseline", str(baseline.pk), "--candidate", str(candidate.pk), "--policy", lenient)
    assert result.code == 0, result
    markdown = summary.read_text()
    assert "**within_tolerance** — release gate passed on 4 trials per case" in markdown
    assert "```\ntrials: 4 per case, paired case by case (95% confidence, tolerated drop 0.2)\n  pass_rate: candidate 1.000" in markdown

"""The release gate on repeated trials (issue 24): paired case by case, it decides only when the evidence does.

Real case runs with trials (``CaseRun.trial``), scored by the real scoring services, compared and
gated through the API; docs/scorecards-and-gates.md, "How a gate decides on trials".
"""

from __future__ import annotations

import pytest
from django.core.management import call_command

from comparisons.services import comparison_create, gate_evaluate
from scoring.tests.factories import make_pack_version, make_run

pytestmark = pytest.mark.django_db

CASES = 10
ANSWERS = {f"c{i}": str(i) for i in range(CASES)}
LENIENT = {"max_regression": 0.2}  # with 10 cases × 4 trials, the gate resolves drops of this size


def _outputs(right: int, trials: int) -> dict[str, list[str]]:
    """Every case answered right in the first ``right`` of its ``trials`` trials, wrong after."""
    return {key: [answer if t < right else "wrong" for t in range(trials)] for key, answer in ANSWERS.items()}


@pytest.fixture
def version(workspace):
    return make_pack_version(workspace, answers=ANSWERS)


def _gate(workspace, member, api_client_for, baseline, candidate, policy=None):
    client = api_client_for(member)
    body = {"baseline_run_id": baseline.pk, "candidate_run_id": candidate.pk}
    comparison = client.post(f"/api/v1/workspaces/{workspace.slug}/comparisons", body, format="json")
    assert comparison.status_code == 201, comparison.content
    assert "trials" not in comparison.json()["summary"]  # raw trials stay out of the API
    url = f"/api/v1/workspaces/{workspace.slug}/comparisons/{comparison.json()['id']}/gate"
    response = client.post(url, {"policy": policy} if policy else {}, format="json")
    assert response.status_code == 201, response.content
    return response.json()


def test_a_candidate_as_good_as_the_baseline_passes_on_its_trials(workspace, member, api_client_for, version):
    baseline = make_run(workspace, pack_version=version, lanes=[_outputs(4, 4)], name="baseline")
    candidate = make_run(workspace, pack_version=version, lanes=[_outputs(4, 4)], name="candidate")
    gate = _gate(workspace, member, api_client_for, baseline, candidate, LENIENT)
    assert (gate["verdict"], gate["reason_code"]) == ("pass", "within_tolerance")
    stats = gate["statistics"]
    assert stats["trials_per_case"] == 4 and stats["single_trial"] is False and stats["max_regression"] == 0.2
    pass_rate = next(c for c in stats["comparisons"] if c["metric"] == "pass_rate")
    low, high = pass_rate["interval"]
    assert pass_rate["difference"] == 0.0 and -0.2 < low < 0 < high and pass_rate["cases"] == CASES
    assert gate["summary"].startswith("release gate passed on 4 trials per case")
    assert gate["policy"]["max_regression"] == 0.2 and gate["policy"]["policy_key"] == "default"


def test_a_candidate_that_dropped_beyond_the_tolerance_fails_with_the_interval(workspace, member, api_client_for, version):
    baseline = make_run(workspace, pack_version=version, lanes=[_outputs(4, 4)], name="baseline")
    candidate = make_run(workspace, pack_version=version, lanes=[_outputs(1, 4)], name="candidate")
    gate = _gate(workspace, member, api_client_for, baseline, candidate, LENIENT)
    assert (gate["verdict"], gate["reason_code"]) == ("fail", "trial_regression")
    pass_rate = next(c for c in gate["statistics"]["comparisons"] if c["metric"] == "pass_rate")
    assert pass_rate["difference"] == pytest.approx(-0.75) and pass_rate["interval"][1] < -0.2
    assert {"condition": "trial_regression", "outcome": "fail"} in gate["triggered_conditions"]
    # The one-trial rules (case regressions, thresholds) do not gate on trials; the deltas are still shown.
    assert gate["dimension_results"]["correctness"]["outcome"] == "not_gated"
    assert gate["dimension_results"]["correctness"]["delta"] < 0


def test_a_close_call_is_insufficient_evidence_with_the_trials_that_would_decide(workspace, member, api_client_for, version):
    baseline = make_run(workspace, pack_version=version, lanes=[_outputs(4, 4)], name="baseline")
    candidate = make_run(workspace, pack_version=version, lanes=[_outputs(3, 4)], name="candidate")
    gate = _gate(workspace, member, api_client_for, baseline, candidate, LENIENT)
    assert (gate["verdict"], gate["reason_code"]) == ("insufficient_evidence", "trials_insufficient")
    stats = gate["statistics"]
    pass_rate = next(c for c in stats["comparisons"] if c["metric"] == "pass_rate")
    low, high = pass_rate["interval"]
    assert pass_rate["difference"] == pytest.approx(-0.25) and low < -0.2 < high
    assert isinstance(stats["more_trials_per_case"], int) and stats["more_trials_per_case"] >= 1
    assert f"about {pass_rate['more_trials_per_case']} more trial(s) per case would likely decide" in gate["summary"]


def test_the_default_tolerance_is_stricter_than_a_lenient_one_on_the_same_trials(workspace, admin, version):
    baseline = make_run(workspace, pack_version=version, lanes=[_outputs(4, 4)], name="baseline")
    candidate = make_run(workspace, pack_version=version, lanes=[_outputs(4, 4)], name="candidate")
    comparison = comparison_create(workspace=workspace, user=admin, baseline_run=baseline, candidate_run=candidate)
    strict = gate_evaluate(comparison=comparison, user=admin)  # max_regression 0.05: 4 trials of 10 cases cannot show it
    assert strict.verdict == "insufficient_evidence" and strict.details["statistics"]["max_regression"] == 0.05
    assert strict.details["statistics"]["confidence"] == 0.95
    # A policy without the trial fields keeps the fingerprint it had before they existed.
    assert "max_regression" not in strict.policy_snapshot


def test_one_trial_on_each_side_keeps_todays_rules_and_says_it_had_one_trial(workspace, admin, member, api_client_for, version):
    baseline = make_run(workspace, pack_version=version, lanes=[{k: [v] for k, v in ANSWERS.items()}], name="baseline")
    candidate = make_run(workspace, pack_version=version, lanes=[{**ANSWERS, "c0": "wrong"}], name="candidate")
    gate = _gate(workspace, member, api_client_for, baseline, candidate)
    assert (gate["verdict"], gate["reason_code"]) == ("fail", "case_regression")
    stats = gate["statistics"]
    assert stats["trials_per_case"] == 1 and stats["single_trial"] is True
    assert stats["note"].startswith("1 trial per case")


def test_one_trial_on_one_side_only_keeps_todays_rules(workspace, admin, version):
    baseline = make_run(workspace, pack_version=version, lanes=[_outputs(4, 4)], name="baseline")
    candidate = make_run(workspace, pack_version=version, lanes=[ANSWERS], name="candidate")
    gate = gate_evaluate(
        comparison=comparison_create(workspace=workspace, user=admin, baseline_run=baseline, candidate_run=candidate), user=admin
    )
    assert gate.reason_code == "within_thresholds" and gate.details["statistics"]["single_trial"] is True


@pytest.mark.parametrize(
    ("policy", "needle"),
    [
        ({"confidence": 1.5}, "confidence must be from 0.5 to below 1"),
        ({"confidence": 0}, "confidence must be from 0.5 to below 1"),
        ({"confidence": "high"}, "confidence must be a number"),
        ({"max_regression": -0.1}, "max_regression must be from 0 to below 1"),
        ({"max_regression": 1}, "max_regression must be from 0 to below 1"),
        ("max_regression: true", "max_regression must be a number"),
    ],
)
def test_the_gate_api_refuses_bad_trial_fields_naming_them(workspace, admin, member, api_client_for, version, policy, needle):
    run = make_run(workspace, pack_version=version, lanes=[ANSWERS])
    other = make_run(workspace, pack_version=version, lanes=[ANSWERS])
    comparison = comparison_create(workspace=workspace, user=admin, baseline_run=run, candidate_run=other)
    url = f"/api/v1/workspaces/{workspace.slug}/comparisons/{comparison.pk}/gate"
    response = api_client_for(member).post(url, {"policy": policy}, format="json")
    assert response.status_code == 400
    assert needle in str(response.json())


def test_the_comparison_page_shows_the_trials_behind_the_verdict(workspace, admin, viewer, client_for, version):
    baseline = make_run(workspace, pack_version=version, lanes=[_outputs(4, 4)], name="baseline")
    candidate = make_run(workspace, pack_version=version, lanes=[_outputs(3, 4)], name="candidate")
    comparison = comparison_create(workspace=workspace, user=admin, baseline_run=baseline, candidate_run=candidate)
    gate = gate_evaluate(comparison=comparison, user=admin, policy=LENIENT)
    page = client_for(viewer).get(f"/w/{workspace.slug}/comparisons/{comparison.pk}/").content.decode()
    trials = page.split('id="gate-trials"')[1].split("</div>")[0]
    assert "<strong>4 trials per case</strong>" in trials and "−0.2" in trials
    more = gate.details["statistics"]["more_trials_per_case"]
    assert f"About <strong>{more} more trial{'s' if more != 1 else ''} per case</strong> would likely decide." in trials
    assert trials.count("badge-insufficient_evidence") >= 1 and "-0.250" in trials


def test_the_gate_command_prints_the_interval_and_the_trials(workspace, version, tmp_path, capsys):
    baseline = make_run(workspace, pack_version=version, lanes=[_outputs(4, 4)], name="baseline")
    candidate = make_run(workspace, pack_version=version, lanes=[_outputs(1, 4)], name="candidate")
    policy = tmp_path / "policy.yaml"
    policy.write_text("max_regression: 0.2\n")
    with pytest.raises(SystemExit) as info:
        call_command("gate", "--baseline", str(baseline.pk), "--candidate", str(candidate.pk), "--policy", str(policy))
    assert info.value.code == 1
    out = capsys.readouterr().out
    assert "reason: trial_regression" in out and "trials: 4 per case, paired case by case (95% confidence, tolerated drop 0.2)" in out
    assert "  pass_rate: candidate 0.250 vs baseline 1.000, change -0.750 (97.5% interval" in out


def test_the_gate_form_takes_the_trial_fields_and_refuses_bad_ones_next_to_the_field(workspace, admin, member, client_for, version):
    baseline = make_run(workspace, pack_version=version, lanes=[_outputs(4, 4)], name="baseline")
    candidate = make_run(workspace, pack_version=version, lanes=[_outputs(1, 4)], name="candidate")
    comparison = comparison_create(workspace=workspace, user=admin, baseline_run=baseline, candidate_run=candidate)
    client = client_for(member)
    url = f"/w/{workspace.slug}/comparisons/{comparison.pk}/gate/"
    refused = client.post(url, {"policy": "confidence: 0.3"})
    assert refused.status_code == 400
    assert '<small class="error">confidence must be from 0.5 to below 1</small>' in refused.content.decode()
    assert not comparison.gate_results.exists()
    response = client.post(url, {"policy": "max_regression: 0.2\nconfidence: 0.9"})
    assert response.status_code == 302
    html = client.get(response.url).content.decode()
    assert 'Release gate: <span class="badge badge-fail">FAIL</span>' in html and "trial_regression" in html
    gate = comparison.gate_results.get()
    assert (gate.policy_snapshot["max_regression"], gate.policy_snapshot["confidence"]) == (0.2, 0.9)

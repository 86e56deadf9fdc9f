"""The default gate policy fits the pack: it requires the dimensions the scorecard declares."""

from __future__ import annotations

from typing import Any

import pytest

from engine.scoring.compare import build_comparison
from engine.scoring.gates import DEFAULT_POLICY, dimension_thresholds, evaluate_gate, parse_policy, policy_fingerprint


def delta(value: float = 0.0, *, source: str = "validators", state: str = "available", reason: str = "") -> Any:
    entry: dict[str, Any] = {"baseline_value": 0.9, "candidate_value": 0.9 + value, "delta": value if state == "available" else None}
    entry.update(better_direction="higher", source=source, state=state)
    if reason:
        entry["reason"] = reason
    return entry


def comparison(deltas: dict, **overrides) -> Any:  # a partial ComparisonSummary: what the rules read
    missing = [f"dimension_deltas.{k}" for k, d in deltas.items() if d["state"] not in ("available", "not_applicable")]
    base = {
        "status": "comparable",
        "dimension_deltas": deltas,
        "scorecard_pass": {"baseline": True, "candidate": True},
        "scorecard_validity": {"baseline": "valid", "candidate": "valid"},
        "failure_divergence": {"candidate_failed_baseline_succeeded": False, "both_failed_differently": False},
        "case_divergence": {"passed_to_failed": [], "failed_to_passed": []},
        "evidence_quality": {"missing_fields": missing, "warnings": []},
        "fingerprint": "f" * 64,
    }
    base.update(overrides)
    return base


def test_a_pack_without_latency_or_cost_still_gets_pass_and_fail():
    same = evaluate_gate(comparison({"correctness": delta(), "reliability": delta(source="reliability")}))
    assert (same["verdict"], same["reason_code"]) == ("pass", "within_thresholds")
    worse = evaluate_gate(comparison({"correctness": delta(-0.5), "reliability": delta(source="reliability")}))
    assert (worse["verdict"], worse["reason_code"]) == ("fail", "threshold_fail_correctness")


def test_pack_declared_dimensions_are_gated_with_correctness_like_thresholds():
    result = evaluate_gate(comparison({"output_contract": delta(-0.05)}))
    assert (result["verdict"], result["reason_code"]) == ("fail", "threshold_fail_output_contract")
    assert result["dimension_results"]["output_contract"]["thresholds_from"] == "dimension_defaults.*"
    assert evaluate_gate(comparison({"faithfulness": delta(-0.03, source="llm_judge")}))["verdict"] == "warn"


def test_latency_and_cost_sourced_dimensions_keep_their_looser_thresholds():
    thresholds = dimension_thresholds(DEFAULT_POLICY, {"speed": delta(source="latency"), "spend": delta(source="cost")})
    assert (thresholds["speed"]["fail_delta"], thresholds["spend"]["fail_delta"]) == (0.15, 0.25)
    assert evaluate_gate(comparison({"speed": delta(-0.1, source="latency")}))["verdict"] == "warn"


def test_an_unpriced_model_is_insufficient_evidence_that_says_what_to_do():
    reason = "candidate unavailable (case 'c1': model 'acme-1' (provider custom) has no price: add a pricing row to the pack's "
    reason += "evaluation_spec.pricing or a workspace price override (admin → Model prices))"
    result = evaluate_gate(comparison({"correctness": delta(), "cost": delta(source="cost", state="unavailable", reason=reason)}))
    assert (result["verdict"], result["reason_code"]) == ("insufficient_evidence", "comparison_evidence_missing")
    assert "'cost' is unavailable" in result["summary"] and "acme-1" in result["summary"]
    assert result["summary"].count("workspace price override") == 1  # the advice is not repeated


def test_a_missing_judge_says_to_configure_one():
    judged = delta(source="llm_judge", state="unavailable", reason="candidate unavailable (case 'q1': no judge configured)")
    result = evaluate_gate(comparison({"faithfulness": judged}, evidence_quality={"missing_fields": [], "warnings": []}))
    assert (result["verdict"], result["reason_code"]) == ("insufficient_evidence", "required_dimension_unavailable")
    assert "configure a judge" in result["summary"] and "'faithfulness'" in result["summary"]


def test_a_degraded_scorecard_names_the_evidence_it_lacks():
    judged = delta(source="llm_judge", state="unavailable", reason="candidate unavailable (case 'q1': no judge configured)")
    c = comparison({"faithfulness": judged}, scorecard_validity={"baseline": "valid", "candidate": "degraded"})
    result = evaluate_gate(c)
    assert result["reason_code"] == "candidate_scorecard_degraded"
    assert "faithfulness" in result["summary"] and "configure a judge" in result["summary"]


def test_a_dimension_that_applies_to_neither_lane_is_not_missing():
    result = evaluate_gate(comparison({"correctness": delta(), "de_escalation": delta(source="llm_judge", state="not_applicable")}))
    assert result["verdict"] == "pass"
    assert result["dimension_results"]["de_escalation"]["outcome"] == "not_applicable"


def test_a_case_that_passed_in_the_baseline_and_fails_in_the_candidate_fails_the_gate():
    c = comparison({"correctness": delta(-0.01)}, case_divergence={"passed_to_failed": ["leak-1"], "failed_to_passed": []})
    result = evaluate_gate(c)
    assert (result["verdict"], result["reason_code"]) == ("fail", "case_regression")
    assert "1 case(s) passed in the baseline and fail in the candidate (leak-1; 0 allowed)" in result["summary"]
    assert {"condition": "case_regression", "outcome": "fail", "cases": ["leak-1"]} in result["triggered_conditions"]


def test_case_regressions_can_be_allowed_or_ignored_by_a_custom_policy():
    c = comparison({"correctness": delta()}, case_divergence={"passed_to_failed": ["a", "b"], "failed_to_passed": []})
    assert evaluate_gate(c, {"max_case_regressions": 2, "dimension_defaults": {"*": {"fail_delta": 0.05}}})["verdict"] == "pass"
    assert evaluate_gate(c, {"dimensions": {"correctness": {"fail_delta": 0.05}}})["verdict"] == "pass"  # rule not set
    assert evaluate_gate(c, {"max_case_regressions": 1, "dimension_defaults": {"*": {"fail_delta": 0.05}}})["verdict"] == "fail"


def test_the_default_policy_is_one_stable_snapshot_for_every_pack():
    a = evaluate_gate(comparison({"correctness": delta()}))
    b = evaluate_gate(comparison({"output_contract": delta()}))
    assert a["policy"] == b["policy"] == DEFAULT_POLICY
    assert a["policy_fingerprint"] == b["policy_fingerprint"] == policy_fingerprint(DEFAULT_POLICY)
    assert DEFAULT_POLICY["required_dimensions"] == "declared" and DEFAULT_POLICY["max_case_regressions"] == 0


def test_a_policy_may_require_the_declared_dimensions_and_set_defaults_by_source():
    policy = parse_policy("required_dimensions: declared\ndimension_defaults:\n  llm_judge: {fail_delta: 0.1}\n")
    assert policy["required_dimensions"] == "declared"
    assert policy["dimension_defaults"] == {"llm_judge": {"fail_delta": 0.1}}
    assert parse_policy("dimension_defaults: {'*': {warn_delta: 0.01}}")["required_dimensions"] == "declared"


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ('{"dimension_defaults": {"vibes": {"fail_delta": 0.1}}}', "dimension_defaults.vibes"),
        ('{"dimension_defaults": {"cost": {"warn_delta": 0.3, "fail_delta": 0.1}}}', "dimension_defaults.cost.warn_delta"),
        ('{"max_case_regressions": -1}', "max_case_regressions"),
        ('{"required_dimensions": "everything"}', "required_dimensions"),
    ],
)
def test_new_policy_fields_are_validated_and_errors_name_the_field(text, field):
    with pytest.raises(ValueError, match=field.replace(".", r"\.")):
        parse_policy(text)


def lane(passed: dict[str, bool], correctness: float) -> dict:
    cases = [{"case_key": k, "passed": v, "run_status": "completed"} for k, v in passed.items()]
    dimensions = {"correctness": {"mean": correctness, "state": "available", "source": "validators"}}
    return {"dimensions": dimensions, "cases": cases, "validity": "valid", "passed": all(passed.values()), "status": "completed"}


def test_end_to_end_a_hidden_case_regression_fails_under_the_default_policy():
    baseline = lane({f"c{i}": True for i in range(20)}, 1.0)
    candidate = lane({**{f"c{i}": True for i in range(19)}, "c19": False}, 0.99)  # the mean moves by 0.01 only
    c = build_comparison(baseline, candidate)
    assert c["dimension_deltas"]["correctness"]["source"] == "validators"
    result = evaluate_gate(c)
    assert (result["verdict"], result["reason_code"]) == ("fail", "case_regression")

from __future__ import annotations

import re
from typing import Any

import pytest

from engine.scoring.gates import BOOLEAN_FIELDS, DEFAULT_POLICY, evaluate_gate, normalize_policy, parse_policy, policy_fingerprint


def comparison(**overrides) -> Any:  # a partial ComparisonSummary: what the rules read
    deltas = {
        k: {"baseline_value": 0.9, "candidate_value": 0.9, "delta": 0.0, "better_direction": "higher", "state": "available"}
        for k in ("correctness", "reliability", "latency", "cost")
    }
    base = {
        "status": "comparable",
        "reason_code": None,
        "dimension_deltas": deltas,
        "scorecard_pass": {"baseline": True, "candidate": True},
        "scorecard_validity": {"baseline": "valid", "candidate": "valid"},
        "failure_divergence": {"candidate_failed_baseline_succeeded": False, "both_failed_differently": False},
        "evidence_quality": {"missing_fields": [], "warnings": []},
        "fingerprint": "f" * 64,
    }
    base.update(overrides)
    return base


def with_delta(key: str, delta: float, state: str = "available") -> Any:
    c = comparison()
    c["dimension_deltas"][key].update(delta=delta, state=state)
    return c


def test_rule_1_not_comparable_is_insufficient_evidence():
    result = evaluate_gate(comparison(status="not_comparable", reason_code="evaluation_spec_mismatch"))
    assert (result["verdict"], result["reason_code"]) == ("insufficient_evidence", "comparison_not_comparable")


def test_rule_2_candidate_validity_is_checked_before_baseline():
    result = evaluate_gate(comparison(scorecard_validity={"baseline": "invalid", "candidate": "degraded"}))
    assert result["reason_code"] == "candidate_scorecard_degraded"
    result = evaluate_gate(comparison(scorecard_validity={"baseline": "invalid", "candidate": "valid"}))
    assert result["reason_code"] == "baseline_scorecard_invalid"


def test_rule_3_missing_evidence_fields():
    result = evaluate_gate(comparison(evidence_quality={"missing_fields": ["scorecard_pass.candidate"]}))
    assert result["reason_code"] == "comparison_evidence_missing"


def test_rule_4_required_dimension_unavailable():
    result = evaluate_gate(with_delta("cost", None, state="unavailable"), {"required_dimensions": ["cost"], "dimensions": {}})
    assert (result["verdict"], result["reason_code"]) == ("insufficient_evidence", "required_dimension_unavailable")
    c = comparison()
    c["dimension_deltas"]["format"] = {"delta": None, "state": "unavailable", "source": "validators"}
    assert evaluate_gate(c)["reason_code"] == "required_dimension_unavailable"  # the default requires every declared one


def test_rule_5_scorecard_pass():
    policy = {"require_scorecard_pass": True, "dimensions": {}}
    assert (
        evaluate_gate(comparison(scorecard_pass={"baseline": True, "candidate": None}), policy)["reason_code"] == "scorecard_pass_unknown"
    )
    result = evaluate_gate(comparison(scorecard_pass={"baseline": True, "candidate": False}), policy)
    assert (result["verdict"], result["reason_code"]) == ("fail", "scorecard_not_passed")


def test_rule_6_candidate_failure_and_both_failed_differently():
    c = comparison(failure_divergence={"candidate_failed_baseline_succeeded": True, "both_failed_differently": False})
    assert (evaluate_gate(c)["verdict"], evaluate_gate(c)["reason_code"]) == ("fail", "candidate_failed_baseline_succeeded")
    c = comparison(failure_divergence={"candidate_failed_baseline_succeeded": False, "both_failed_differently": True})
    assert evaluate_gate(c)["reason_code"] == "both_failed_differently"


def test_rule_6_thresholds_are_inclusive_for_warn_and_fail():
    assert evaluate_gate(with_delta("correctness", -0.02))["reason_code"] == "threshold_warn_correctness"
    assert evaluate_gate(with_delta("correctness", -0.05))["reason_code"] == "threshold_fail_correctness"
    assert evaluate_gate(with_delta("correctness", -0.0199))["verdict"] == "pass"


def test_improvements_never_trip_thresholds_even_for_latency():
    result = evaluate_gate(with_delta("latency", +0.5))
    assert (result["verdict"], result["reason_code"]) == ("pass", "within_thresholds")
    assert evaluate_gate(with_delta("latency", -0.15))["reason_code"] == "threshold_fail_latency"


def test_rule_7_first_sorted_fail_wins_and_warns_follow_fails():
    c = comparison()
    c["dimension_deltas"]["reliability"]["delta"] = -0.3
    c["dimension_deltas"]["cost"]["delta"] = -0.3
    c["dimension_deltas"]["correctness"]["delta"] = -0.03
    result = evaluate_gate(c)
    assert (result["verdict"], result["reason_code"]) == ("fail", "threshold_fail_cost")
    conditions = {t["condition"] for t in result["triggered_conditions"]}
    assert {"threshold_fail_cost", "threshold_fail_reliability", "threshold_warn_correctness"} <= conditions
    assert result["dimension_results"]["correctness"]["outcome"] == "warn"


def test_pass_result_carries_policy_snapshot_and_fingerprint():
    result = evaluate_gate(comparison())
    assert result["verdict"] == "pass"
    assert result["policy"] == DEFAULT_POLICY
    assert result["policy_fingerprint"] == policy_fingerprint(DEFAULT_POLICY)
    assert "require_scorecard_pass" not in result["policy"]


def regression_comparison(candidate, baseline=None) -> Any:
    return comparison(regression={"candidate": candidate, "baseline": baseline})


RULES = {"regression_gate_rules": {"no_blocking_regression_failure": True}, "dimensions": {}, "required_dimensions": []}


def test_regression_blocking_failure_fails_the_gate():
    c = regression_comparison([{"regression_case_id": "r1", "severity": "blocking", "failed": True}])
    result = evaluate_gate(c, RULES)
    assert (result["verdict"], result["reason_code"]) == ("fail", "regression_blocking_failure")


def test_regression_new_failure_vs_baseline_and_missing_baseline_warning():
    rules = {**RULES, "regression_gate_rules": {"no_new_blocking_failure_vs_baseline": True}}
    failed = [{"regression_case_id": "r1", "severity": "blocking", "failed": True}]
    passed = [{"regression_case_id": "r1", "severity": "blocking", "failed": False}]
    assert evaluate_gate(regression_comparison(failed, passed), rules)["verdict"] == "fail"
    result = evaluate_gate(regression_comparison(failed, None), rules)
    assert result["verdict"] == "pass" and result["warnings"]


def test_regression_warning_budget_and_missing_evidence():
    rules = {**RULES, "regression_gate_rules": {"max_warning_regression_failures": 0}}
    warned = [{"regression_case_id": "w1", "severity": "warning", "failed": True}]
    assert evaluate_gate(regression_comparison(warned), rules)["verdict"] == "warn"
    assert evaluate_gate(regression_comparison(None), rules)["verdict"] == "insufficient_evidence"


def test_regression_insufficient_does_not_override_a_base_failure():
    c = regression_comparison(None)
    c["failure_divergence"]["candidate_failed_baseline_succeeded"] = True
    rules = {**RULES, "fail_on_candidate_failure": True}
    assert evaluate_gate(c, rules)["verdict"] == "fail"


def test_parse_policy_accepts_json_and_yaml_and_lowercases_keys():
    assert parse_policy('{"policy_key": "Strict", "dimensions": {"Correctness": {"fail_delta": 0.1}}}')["dimensions"] == {
        "correctness": {"fail_delta": 0.1}
    }
    policy = parse_policy(
        "policy_key: ci\npolicy_version: 2\nrequire_comparable: true\ndimensions:\n  cost: {warn_delta: 0.1, fail_delta: 0.2}\n"
    )
    assert (policy["policy_key"], policy["policy_version"], policy["required_dimensions"]) == ("ci", 2, ["cost"])
    assert parse_policy("") == DEFAULT_POLICY


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ('{"policy_version": 0}', "policy_version"),
        ('{"require_comparable": "yes"}', "require_comparable"),
        ('{"dimensions": {"cost": {"warn_delta": 0.3, "fail_delta": 0.2}}}', "dimensions.cost.warn_delta"),
        ('{"dimensions": {"cost": {"warn_delta": -1}}}', "dimensions.cost.warn_delta"),
        ('{"dimensions": {"cost": {}}}', "dimensions.cost"),
        ('{"colour": "red"}', "colour"),
        ("[1, 2]", "mapping"),
        ("key: [unclosed", "YAML"),
    ],
)
def test_parse_policy_errors_name_the_field(text, field):
    with pytest.raises(ValueError, match=field.replace(".", r"\.")):
        parse_policy(text)


@pytest.mark.parametrize(
    ("policy", "message"),
    [
        ({"policy_key": " "}, "policy_key must be a non-empty string"),
        ({"policy_key": 3}, "policy_key must be a non-empty string"),
        ({"policy_version": True}, "policy_version must be an integer"),
        ({"dimensions": ["cost"]}, "dimensions must be a mapping"),
        ({"dimensions": {"cost": {"fail_delta": 1, "nudge": 1}}}, "dimensions.cost.nudge: unknown threshold field"),
        ({"dimension_defaults": []}, "dimension_defaults must be a mapping"),
        ({"dimension_defaults": {"vibes": {"fail_delta": 1}}}, "dimension_defaults.vibes: not a dimension source"),
        ({"dimension_defaults": {"cost": {"fail_delta": "x"}}}, "dimension_defaults.cost.fail_delta must be a number"),
        ({"max_case_regressions": -1}, "max_case_regressions must be an integer >= 0"),
        ({"max_case_regressions": True}, "max_case_regressions must be an integer >= 0"),
        ({"required_dimensions": "all"}, "required_dimensions must be a list"),
        ({"required_dimensions": ["cost", " "]}, "required_dimensions must be a list"),
        ({"regression_gate_rules": []}, "regression_gate_rules must be a mapping"),
        ({"regression_gate_rules": {"sneaky": 1}}, "regression_gate_rules.sneaky: unknown rule"),
        ({"regression_gate_rules": {"no_blocking_regression_failure": 1}}, "no_blocking_regression_failure must be true or false"),
        ({"regression_gate_rules": {"max_warning_regression_failures": -2}}, "max_warning_regression_failures must be an integer"),
        ({"regression_gate_rules": {"suite_ids": "s1"}}, "regression_gate_rules.suite_ids must be a list"),
    ],
)
def test_normalize_policy_rules_reject(policy, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        normalize_policy(policy)


@pytest.mark.parametrize(
    ("policy", "expected"),
    [
        ({"policy_key": " CI "}, {"policy_key": "ci", "policy_version": 1, "dimensions": {}, "required_dimensions": []}),
        ({"require_scorecard_pass": True}, {"require_scorecard_pass": True}),
        ({"require_scorecard_pass": False}, {"require_scorecard_pass": None}),
        ({"dimensions": None}, {"dimensions": {}, "required_dimensions": []}),
        (
            {"dimension_defaults": {"*": {"fail_delta": 0.1}}},
            {"dimension_defaults": {"*": {"fail_delta": 0.1}}, "required_dimensions": "declared"},
        ),
        ({"max_case_regressions": 2}, {"max_case_regressions": 2}),
        ({"policy_key": "x"}, {"max_case_regressions": None, "regression_gate_rules": None, "dimension_defaults": None}),
        ({"required_dimensions": " Declared "}, {"required_dimensions": "declared"}),
        ({"required_dimensions": [" Cost "]}, {"required_dimensions": ["cost"]}),
        ({"regression_gate_rules": {"suite_ids": ["s"]}}, {"regression_gate_rules": {"suite_ids": ["s"]}}),
    ],
)
def test_normalize_policy_rules_fill(policy, expected):
    out = normalize_policy(policy)
    assert {k: out.get(k) for k in expected} == expected


def test_normalize_policy_boolean_fields_default_to_false():
    out = normalize_policy({"policy_key": "x"})
    assert all(out[f] is False for f in BOOLEAN_FIELDS if f != "require_scorecard_pass")


def test_a_broken_yaml_policy_says_where_in_plain_words_without_a_caret():
    with pytest.raises(ValueError) as caught:
        parse_policy("gates:\n  - key: a\n   bad: [1\n")
    message = str(caught.value)
    assert message.startswith("policy is neither valid JSON nor valid YAML: line ") and "^" not in message and "\n" not in message

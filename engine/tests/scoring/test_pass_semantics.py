"""When a case passes: a weighted scorecard with neither gates nor a threshold needs every check to hold."""

from __future__ import annotations

from engine.scoring import aggregate_lane, score_case
from engine.scoring.dimensions import DimensionScore
from engine.scoring.strategies import CaseFacts, overall
from engine.tests.scoring.helpers import evidence, run_events, spec

CONTAINS_42 = {"key": "has_42", "type": "contains", "target": "final_output", "expected_from": "literal:42"}
MENTIONS_DATA = {"key": "mentions_data", "type": "contains", "target": "final_output", "expected_from": "literal:data"}
FILE_CHECK = {"key": "report_file", "type": "file_exists", "target": "file:report"}


def no_gates_spec(validators=None, dimensions=None, **extra):
    return spec(validators or [CONTAINS_42, MENTIONS_DATA], dimensions or ["correctness", "reliability"], **extra)


def test_a_failed_validator_fails_the_case_although_the_reference_would_pass_it():
    result = score_case(no_gates_spec(), evidence("42 and no more")).as_dict()
    assert result["overall_score"] > 0 and result["passed"] is False
    assert "validator 'mentions_data' failed" in result["overall_reason"]


def test_a_case_whose_every_validator_passed_passes():
    result = score_case(no_gates_spec(), evidence("42, from the data")).as_dict()
    assert (result["passed"], result["overall_reason"]) == (True, "every available validator passed")


def test_a_case_whose_run_did_not_complete_fails():
    ev = evidence(None, events=run_events(failed=True).items, status="failed", stop_reason="step_limit")
    result = score_case(no_gates_spec(), ev).as_dict()
    assert result["passed"] is False and "did not complete (step_limit)" in result["overall_reason"]


def test_a_dimension_s_own_threshold_counts_even_without_a_gate():
    dims = [{"key": "correctness", "source": "validators", "pass_threshold": 1.0}]
    result = score_case(no_gates_spec(validators=[CONTAINS_42], dimensions=dims), evidence("42")).as_dict()
    assert result["passed"] is True
    dims = [{"key": "correctness", "source": "validators", "pass_threshold": 1.0, "validators": ["has_42"]}]
    spec_ = no_gates_spec(validators=[CONTAINS_42, {**MENTIONS_DATA, "key": "other"}], dimensions=dims)
    assert score_case(spec_, evidence("41")).as_dict()["passed"] is False


def test_nothing_that_could_decide_the_case_leaves_it_unknown():
    spec_ = no_gates_spec(validators=[FILE_CHECK], dimensions=["reliability"], post_execution_checks=[])
    result = score_case(spec_, evidence("42")).as_dict()
    assert result["passed"] is None and "could decide" in result["overall_reason"]


def test_gates_or_a_pass_threshold_keep_the_reference_rule():
    threshold = no_gates_spec(scorecard={"pass_threshold": 0.5})
    assert score_case(threshold, evidence("42 and no more")).as_dict()["passed"] is True  # 0.75 ≥ 0.5
    gated = no_gates_spec(dimensions=[{"key": "reliability", "source": "reliability", "gate": True, "pass_threshold": 1.0}])
    assert score_case(gated, evidence("42 and no more")).as_dict()["passed"] is True


def test_without_case_facts_the_strategy_is_the_reference_s():
    dims = [DimensionScore("c", "validators", "available", 0.0, "", 1.0, False, None, "higher")]
    assert overall("weighted", dims, None).passed is True
    assert overall("weighted", dims, None, CaseFacts(available_validators=1, failed_validators=("v",))).passed is False
    assert overall("binary", dims, None, CaseFacts(available_validators=1, failed_validators=("v",))).passed is False


def test_the_lane_and_its_pass_rate_follow_the_case_verdicts():
    s = no_gates_spec()
    cases = [score_case(s, evidence("42, data", case_key="good")), score_case(s, evidence("42 only", case_key="bad"))]
    card = aggregate_lane(s, cases)
    assert (card["passed"], card["pass_rate"], card["case_counts"]["failed"]) == (False, 0.5, 1)
    assert [c["passed"] for c in card["cases"]] == [True, False]


def test_a_case_whose_run_did_not_complete_never_passes_whatever_the_strategy():
    gate = DimensionScore("recovery", "behavioral", "available", 1.0, "", 1.0, True, 0.5, "higher")
    facts = CaseFacts(run_completed=False, stop_reason="provider_error", available_validators=0)
    assert overall("hybrid", [gate], None).passed is True  # the reference rule
    result = overall("hybrid", [gate], None, facts)
    assert (result.score, result.passed, result.reason) == (1.0, False, "the case run did not complete (provider_error)")

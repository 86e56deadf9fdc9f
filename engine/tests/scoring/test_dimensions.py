from __future__ import annotations

import pytest

from engine.scoring import score_case
from engine.tests.scoring.helpers import Events, evidence, run_events, spec

V_PASS = {"key": "ok", "type": "exact_match", "target": "final_output", "expected_from": "literal:42"}
V_FAIL = {"key": "bad", "type": "exact_match", "target": "final_output", "expected_from": "literal:41"}


def dims(s, ev=None, **kwargs) -> dict:
    return score_case(s, ev or evidence("42"), **kwargs).as_dict()["dimensions"]


def test_legacy_correctness_is_the_mean_of_all_validators():
    d = dims(spec([V_PASS, V_FAIL], ["correctness"]))["correctness"]
    assert (d["state"], d["score"], d["source"]) == ("available", 0.5, "validators")


def test_validators_dimension_with_an_errored_validator_is_an_error():
    broken = {"key": "re", "type": "regex_match", "target": "final_output", "expected_from": "literal:("}
    assert dims(spec([V_PASS, broken], ["correctness"]))["correctness"]["state"] == "error"


def test_validators_dimension_with_an_unavailable_validator_is_unavailable():
    missing = {"key": "f", "type": "contains", "target": "file:nope", "expected_from": "literal:x"}
    assert dims(spec([V_PASS, missing], ["correctness"]))["correctness"]["state"] == "unavailable"


def test_reliability_requires_completion_and_no_failures():
    assert dims(spec(dimensions=["reliability"]))["reliability"]["score"] == 1.0
    events = run_events().items[:-1] + Events().tool("x", failed=True).items + run_events().items[-1:]
    assert dims(spec(dimensions=["reliability"]), evidence("42", events=events))["reliability"]["score"] == 0.0


def test_latency_is_normalised_lower_is_better_with_runtime_limit_fallback():
    s = spec(
        dimensions=["latency"], runtime_limits={"max_duration_ms": 3000}, scorecard={"normalization": {"latency": {"target_ms": 1000}}}
    )
    d = dims(s)["latency"]
    assert d["score"] == pytest.approx(0.5)  # 2000 ms between 1000 and 3000
    assert (d["better_direction"], d["declared_direction"], d["raw_value"]) == ("higher", "lower", 2000)


def test_latency_at_or_below_target_scores_one_and_at_max_zero():
    fast = {"key": "latency", "source": "latency", "better_direction": "lower", "normalization": {"target": 2000, "max": 5000}}
    slow = {**fast, "normalization": {"target": 100, "max": 2000}}
    assert dims(spec(dimensions=[fast]))["latency"]["score"] == 1.0
    assert dims(spec(dimensions=[slow]))["latency"]["score"] == 0.0


def test_cost_dimension_uses_pricing():
    cost = {"key": "cost", "source": "cost", "better_direction": "lower", "normalization": {"target": 0.0, "max": 0.02}}
    assert dims(spec(dimensions=[cost]))["cost"]["score"] == pytest.approx(1 - 0.0075 / 0.02)


def test_metric_dimension_normalises_in_the_declared_direction():
    metrics = [{"key": "tok", "type": "numeric", "collector": "run_total_tokens"}]
    higher = {"key": "m", "source": "metric", "metric": "tok", "better_direction": "higher", "normalization": {"target": 3000, "max": 0}}
    assert dims(spec(dimensions=[higher], metrics=metrics))["m"]["score"] == pytest.approx(0.5)
    bad = {**higher, "normalization": {"target": 0, "max": 3000}}
    assert dims(spec(dimensions=[bad], metrics=metrics))["m"]["state"] == "error"


def test_behavioral_dimension_is_a_weighted_mean_and_gates_veto():
    events = run_events().items[:-1] + Events().tool("x", failed=True).tool("x", failed=True).tool("y").items + run_events().items[-1:]
    signals = [{"key": "error_cascade", "weight": 1.0}, {"key": "exploration_efficiency", "weight": 3.0}]
    s = spec(dimensions=["behavioral"], behavioral={"signals": signals})
    assert dims(s, evidence("42", events=events))["behavioral"]["score"] == pytest.approx((0.5 + 3 * (2 / 3)) / 4)
    gated = [{"key": "recovery_behavior", "weight": 1.0, "gate": True, "pass_threshold": 0.9}, signals[1]]
    s = spec(dimensions=["behavioral"], behavioral={"signals": gated})
    assert dims(s, evidence("42", events=events))["behavioral"]["score"] == 0.0


def test_behavioral_dimension_without_signals_is_an_error():
    assert dims(spec(dimensions=["behavioral"]))["behavioral"]["state"] == "error"


def test_unknown_legacy_dimension_is_an_error():
    assert dims(spec(dimensions=["vibes"]))["vibes"]["state"] == "error"


def test_llm_judge_dimension_without_a_result_is_unavailable():
    d = {"key": "q", "source": "llm_judge", "judge_key": "quality"}
    assert dims(spec(dimensions=[d]))["q"]["state"] == "unavailable"


def test_human_preference_dimension_reads_supplied_scores():
    d = {"key": "pref", "source": "human_preference"}
    assert dims(spec(dimensions=[d]), human_preferences={"pref": 0.7})["pref"]["score"] == 0.7
    assert dims(spec(dimensions=[d]))["pref"]["state"] == "unavailable"

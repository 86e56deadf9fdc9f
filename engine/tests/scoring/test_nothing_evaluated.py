"""Issue 22, item 8: nothing evaluated is not 1.0.

A case whose every dimension is not applicable or unavailable has no score and does not pass by
default; a hybrid scorecard whose gates pass but whose declared non-gate dimensions all do not
apply has no score either; and a lane of such cases has no score and no pass rate of 1.0.
"""

from __future__ import annotations

import json

import pytest

from engine.scoring import score_case
from engine.scoring.aggregate import aggregate_lane, rank_lanes
from engine.scoring.dimensions import DimensionScore
from engine.scoring.evidence import CaseEvidence
from engine.scoring.strategies import CaseFacts, hybrid, overall
from engine.tests.scoring.helpers import FakeJudge, evidence, spec
from engine.types import JSON

NA, UNAVAILABLE = "not_applicable", "unavailable"


def dim(key, score=None, *, state="available", gate=False, threshold=None, weight=1.0) -> DimensionScore:
    return DimensionScore(
        key=key,
        source="llm_judge",
        state=state,
        score=score if state == "available" else None,
        reason="" if state == "available" else f"{key} {state}",
        weight=weight,
        gate=gate,
        pass_threshold=threshold,
        declared_direction="higher",
    )


COMPLETED = CaseFacts(run_completed=True, available_validators=1)


# -- the strategies ----------------------------------------------------------------------------


@pytest.mark.parametrize("strategy", ["weighted", "binary", "hybrid"])
@pytest.mark.parametrize("facts", [None, COMPLETED])
@pytest.mark.parametrize("threshold", [None, 0.5])
def test_every_dimension_not_applicable_has_no_score_and_no_pass(strategy, facts, threshold):
    dims = [dim("gate", state=NA, gate=True, threshold=0.5), dim("judge", state=NA)]
    result = overall(strategy, dims, threshold, facts)
    assert (result.score, result.passed) == (None, None)
    assert (
        result.reason
        == "nothing was evaluated: 'gate' is not_applicable (gate not_applicable); 'judge' is not_applicable (judge not_applicable)"
    )


@pytest.mark.parametrize("facts", [None, COMPLETED])
def test_weighted_with_every_dimension_unavailable_has_no_score_and_does_not_pass(facts):
    # Before: the implicit rule passed it ("every available validator passed") with score None.
    result = overall("weighted", [dim("a", state=UNAVAILABLE), dim("b", state=NA)], None, facts)
    assert (result.score, result.passed) == (None, None)
    assert result.reason.startswith("nothing was evaluated: 'a' is unavailable")


def test_nothing_evaluated_still_fails_when_something_failed_the_case():
    dims = [dim("a", state=NA)]
    not_completed = CaseFacts(run_completed=False, stop_reason="timeout")
    assert overall("weighted", dims, None, not_completed) == overall("hybrid", dims, None, not_completed)
    result = overall("binary", dims, None, not_completed)
    assert (result.score, result.passed, result.reason) == (None, False, "the case run did not complete (timeout)")
    failed_validator = CaseFacts(available_validators=1, failed_validators=("answer",))
    result = overall("weighted", dims, None, failed_validator)
    assert (result.score, result.passed) == (None, False) and "'answer' failed" in result.reason


def test_a_missing_required_dimension_still_fails_but_has_no_score():
    gate_missing = [dim("g", state=UNAVAILABLE, gate=True, threshold=0.5), dim("j", state=NA)]
    for strategy in ("weighted", "hybrid"):
        result = overall(strategy, gate_missing, None, COMPLETED)
        assert (result.score, result.passed, result.reason) == (None, False, "gate 'g' is unavailable")
    result = overall("binary", [dim("a", state=UNAVAILABLE), dim("b", state=NA)], None, COMPLETED)
    assert (result.score, result.passed, result.reason) == (None, False, "dimension 'a' is unavailable")  # was 0.0


def test_hybrid_gates_passing_with_every_other_dimension_not_applicable_is_not_one():
    # multi-turn-refund-recovery: the recovery gate passes vacuously, the only judge does not apply.
    dims = [dim("recovery", 1.0, gate=True, threshold=0.5), dim("judge", state=NA)]
    for result in (overall("hybrid", dims, 0.75, COMPLETED), overall("hybrid", dims, None), hybrid(dims, 0.75)):
        assert (result.score, result.passed) == (None, None)
        assert result.reason == "every gate passed, but nothing decided the score: 'judge' is not_applicable (judge not_applicable)"


def test_hybrid_other_rules_are_unchanged():
    gate = dim("g", 1.0, gate=True, threshold=0.5)
    # gates alone, nothing else declared: the gates decide
    assert (overall("hybrid", [gate], None).score, overall("hybrid", [gate], None).passed) == (1.0, True)
    # a failed gate fails whatever does not apply
    failed = overall("hybrid", [dim("g", 0.2, gate=True, threshold=0.5), dim("j", state=NA)], None)
    assert (failed.score, failed.passed) == (0.0, False)
    # some non-gate dimensions apply: the mean of those
    mixed = overall("hybrid", [gate, dim("j", state=NA), dim("v", 0.8)], 0.75)
    assert (mixed.score, mixed.passed) == (0.8, True)
    # non-gate dimensions unavailable (not "not applicable"): as before
    missing = overall("hybrid", [gate, dim("j", state=UNAVAILABLE)], None)
    # no pass threshold: whatever the missing dimension would score, the gates decide (pass), but
    # there is no score to rank by
    assert (missing.score, missing.passed) == (None, True)
    decided = overall("hybrid", [gate, dim("j", state=UNAVAILABLE)], 0.5)
    assert (decided.score, decided.passed) == (None, None) and decided.reason.startswith("unscored:")
    # a run that did not complete never passes
    assert overall("hybrid", [gate, dim("j", state=NA)], None, CaseFacts(run_completed=False)).passed is False


def test_something_evaluated_still_scores():
    dims = [dim("a", 0.4), dim("b", state=NA)]
    assert (overall("weighted", dims, None, CaseFacts()).score, overall("binary", dims, None).score) == (0.4, 0.0)


# -- a whole case ------------------------------------------------------------------------------

MISMATCH_JUDGE = {
    "key": "recovers",
    "mode": "assertion",
    "model": "claude-haiku-4-5",
    "samples": 1,
    "assertion": "After the mismatch the assistant recovers.",
    "context_from": ["transcript.from_mismatch"],
}


def conversation() -> CaseEvidence:
    """One turn without a mismatch: a judge over transcript.from_mismatch does not apply."""
    events: list[dict[str, JSON]] = [
        {"event_id": "e1", "event_type": "turn.user.message", "sequence_number": 1, "payload": {"turn_index": 1, "message": "refund?"}},
        {"event_id": "e2", "event_type": "turn.assistant.message", "sequence_number": 2, "payload": {"turn_index": 1, "message": "no."}},
        {"event_id": "e3", "event_type": "turn.completed", "sequence_number": 3, "payload": {"turn_index": 1, "mismatch": False}},
    ]
    return CaseEvidence(case_key="c", final_output="no.", events=events)


def judge_only_spec(strategy: str):
    return spec(
        validators=[],
        judge_mode="llm_judge",
        llm_judges=[MISMATCH_JUDGE],
        dimensions=[{"key": "judge", "source": "llm_judge", "judge_key": "recovers"}],
        scorecard={"strategy": strategy},
    )


@pytest.mark.parametrize("strategy", ["weighted", "binary"])
def test_a_case_whose_only_judge_does_not_apply_has_no_score_and_is_degraded(strategy):
    result = score_case(judge_only_spec(strategy), conversation(), judge=FakeJudge([json.dumps({"pass": True})])).as_dict()
    assert result["dimensions"]["judge"]["state"] == NA
    assert (result["overall_score"], result["passed"]) == (None, None)
    assert result["overall_reason"].startswith("nothing was evaluated: 'judge' is not_applicable")
    assert result["validity"] == "degraded"
    assert result["validity_reason"].startswith("the case has no score: nothing was evaluated")
    assert result["side_metrics"]["cost_per_correct_usd"] is None


def test_a_case_whose_only_judge_is_out_of_scale_does_not_pass_on_its_validator():
    # weighted, no gate, no threshold: the validator passed, but the only dimension (the judge) is
    # unavailable; before, the implicit rule passed the case.
    s = spec(
        judge_mode="llm_judge",
        llm_judges=[{"key": "q", "mode": "rubric", "model": "m", "samples": 1, "context_from": ["final_output"], "rubric": "1-5"}],
        dimensions=[{"key": "q", "source": "llm_judge", "judge_key": "q"}],
    )
    result = score_case(s, evidence("42"), judge=FakeJudge([json.dumps({"score": 50})])).as_dict()
    assert (result["overall_score"], result["passed"], result["validity"]) == (None, None, "degraded")


def test_a_scored_case_keeps_its_validity():
    result = score_case(spec(), evidence("42")).as_dict()
    assert (result["overall_score"], result["passed"], result["validity"]) == (1.0, True, "valid")


# -- the lane ----------------------------------------------------------------------------------


def test_a_lane_of_unscored_cases_has_no_score_and_no_pass_rate_of_one():
    s = judge_only_spec("weighted")
    cases = [score_case(s, conversation(), judge=FakeJudge([json.dumps({"pass": True})])) for _ in range(3)]
    card = aggregate_lane(s, cases, refs={"run_id": 1, "lane_id": 1})
    assert card["overall_score"] is None
    assert card["pass_rate"] == 0.0
    assert card["passed"] is None
    assert card["case_counts"]["passed"] == 0 and card["case_counts"]["unknown"] == 3
    assert card["validity"] == "degraded" and "the case has no score" in card["validity_reason"]


def test_an_unscored_lane_ranks_below_a_scored_one():
    scored = aggregate_lane(spec(), [score_case(spec(), evidence("42"))], refs={"run_id": 1, "lane_id": 1})
    s = judge_only_spec("weighted")
    unscored = aggregate_lane(s, [score_case(s, conversation(), judge=FakeJudge([]))], refs={"run_id": 1, "lane_id": 2})
    ranking = rank_lanes({"unscored": unscored, "scored": scored})
    assert [r["lane_id"] for r in ranking["ranking"]] == ["scored", "unscored"]
    assert ranking["winner_lane_id"] == "scored"
    only_unscored = rank_lanes({"a": unscored, "b": unscored})
    assert only_unscored["winner_lane_id"] is None and only_unscored["winner_reason"] == "no lane has an overall score"

"""Issue 22, item 3: a judge score outside its ``score_scale`` is an unparseable reply, never clamped."""

from __future__ import annotations

import json

import pytest

from engine.scoring import score_case
from engine.tests.scoring.helpers import FakeJudge, evidence, spec


def rubric(**extra) -> dict:
    return {
        "key": "quality",
        "mode": "rubric",
        "model": "claude-sonnet-4-6",
        "samples": 1,
        "context_from": ["final_output"],
        "rubric": "Score correctness 1-5.",
        **extra,
    }


def reply(score) -> str:
    return json.dumps({"score": score, "confidence": "high", "reasoning": "ok"})


def judged(decl: dict, fake: FakeJudge, **scorecard):
    dims = [{"key": "q", "source": "llm_judge", "judge_key": decl["key"], **scorecard.pop("dim", {})}]
    s = spec(dimensions=dims, judge_mode="llm_judge", llm_judges=[decl], **scorecard)
    return score_case(s, evidence("42"), judge=fake).as_dict()


@pytest.mark.parametrize(
    ("text", "why"),
    [
        (reply(50), "score 50 is outside score_scale 1..5"),
        (reply(-3), "score -3 is outside score_scale 1..5"),
        (reply(5.0001), "score 5.0001 is outside score_scale 1..5"),
        (reply(0), "outside score_scale"),
        ('{"score": NaN, "confidence": "high"}', "score nan is outside"),
        ('{"score": Infinity, "confidence": "high"}', "score inf is outside"),
        ('{"score": -Infinity, "confidence": "high"}', "score -inf is outside"),
        (reply(True), "response has no numeric score"),
        (reply(False), "response has no numeric score"),
        (reply("4"), "response has no numeric score"),  # the parser never accepted strings
        (reply(None), "response has no numeric score"),
    ],
)
def test_a_score_outside_the_scale_is_an_unparseable_call(text, why):
    result = judged(rubric(), FakeJudge([text]))
    judge = result["llm_judge_details"][0]
    (call,) = judge["payload"]["calls"]
    assert call["score"] is None
    assert call["error"].startswith("unparseable judge response: ") and why in call["error"]
    assert call["response_text"] == text  # the reply stays on record
    assert judge["state"] == "unavailable" and judge["normalized_score"] is None
    assert judge["reason"].startswith("all judge calls failed: unparseable judge response")
    # Neither clamped to a pass (50) nor to a fail (-3): the case has no judge evidence.
    assert result["dimensions"]["q"]["state"] == "unavailable"
    assert result["overall_score"] is None and result["passed"] is not True
    assert result["validity"] == "degraded"


@pytest.mark.parametrize(("score", "expected"), [(1, 0.0), (5, 1.0), (1.0, 0.0), (5.0, 1.0), (3, 0.5), (4.5, 0.875)])
def test_the_edges_of_the_scale_are_accepted(score, expected):
    judge = judged(rubric(), FakeJudge([reply(score)]))["llm_judge_details"][0]
    assert judge["state"] == "available"
    assert judge["normalized_score"] == expected
    assert judge["payload"]["calls"][0]["error"] is None


def test_a_declared_scale_is_the_one_checked():
    decl = rubric(score_scale={"min": 0, "max": 10})
    assert judged(decl, FakeJudge([reply(10)]))["llm_judge_details"][0]["normalized_score"] == 1.0
    assert judged(decl, FakeJudge([reply(0)]))["llm_judge_details"][0]["normalized_score"] == 0.0
    bad = judged(decl, FakeJudge([reply(11)]))["llm_judge_details"][0]
    assert bad["state"] == "unavailable" and "score 11 is outside score_scale 0..10" in bad["reason"]


def test_an_out_of_scale_sample_is_dropped_like_any_unparseable_reply():
    # Same handling as a reply with no JSON: no retry, the other samples decide, and the failed
    # call is a warning that lowers the confidence.
    judge = judged(rubric(samples=3), FakeJudge([reply(50), reply(4), reply(2)]))["llm_judge_details"][0]
    same = judged(rubric(samples=3), FakeJudge(["no json here", reply(4), reply(2)]))["llm_judge_details"][0]
    assert judge["normalized_score"] == same["normalized_score"] == 0.5  # median of 0.75 and 0.25
    assert judge["confidence"] == same["confidence"] == "low"
    # 0.75 and 0.25 fall on both sides of 0.5: a split vote, also said
    warnings = ["judge samples disagree on pass/fail (split vote)", "1 of 3 judge calls failed"]
    assert judge["payload"]["warnings"] == same["payload"]["warnings"] == warnings
    assert [c["score"] for c in judge["payload"]["calls"]] == [None, 0.75, 0.25]


def test_negative_out_of_scale_samples_do_not_fail_a_good_answer():
    judge = judged(rubric(samples=3), FakeJudge([reply(-3), reply(5), reply(5)]))["llm_judge_details"][0]
    assert judge["normalized_score"] == 1.0


def test_consensus_ignores_a_model_whose_every_reply_is_out_of_scale():
    fake = FakeJudge({"claude-a": [reply(50), reply(50)], "gpt-b": [reply(4), reply(4)]})
    decl = rubric(model=None, models=["claude-a", "gpt-b"], samples=2, consensus={"aggregation": "mean", "flag_on_disagreement": True})
    judge = judged(decl, fake)["llm_judge_details"][0]
    assert judge["payload"]["model_scores"] == {"gpt-b": 0.75}
    assert judge["normalized_score"] == 0.75
    assert judge["reason"] == "mean of 1 model(s)"
    assert judge["confidence"] == "low"
    assert "2 of 4 judge calls failed" in judge["payload"]["warnings"]


@pytest.mark.parametrize("aggregation", ["majority_vote", "unanimous", "median"])
def test_every_aggregation_ignores_out_of_scale_models(aggregation):
    fake = FakeJudge({"claude-a": [reply(-3)], "gpt-b": [reply(5)], "gemini-c": [reply(5)]})
    decl = rubric(model=None, models=["claude-a", "gpt-b", "gemini-c"], consensus={"aggregation": aggregation})
    judge = judged(decl, fake)["llm_judge_details"][0]
    assert set(judge["payload"]["model_scores"]) == {"gpt-b", "gemini-c"}
    assert judge["normalized_score"] == 1.0


def test_reference_mode_checks_the_scale_too():
    decl = {
        "key": "ref",
        "mode": "reference",
        "model": "claude-sonnet-4-6",
        "samples": 1,
        "context_from": ["final_output"],
        "reference_from": "literal:42",
        "rubric": "Compare.",
    }
    judge = judged(decl, FakeJudge([reply(6)]))["llm_judge_details"][0]
    assert judge["state"] == "unavailable" and "outside score_scale" in judge["reason"]

from __future__ import annotations

import json
from typing import cast

import pytest

from engine.scoring import score_case
from engine.scoring.documents import CaseScoreDocument, JudgeResult
from engine.scoring.judges import parse_json_reply, run_nwise_judge
from engine.tests.scoring.helpers import FakeJudge, evidence, spec


def rubric(**extra) -> dict:
    return {
        "key": "quality",
        "mode": "rubric",
        "model": "claude-sonnet-4-6",
        "samples": 3,
        "context_from": ["final_output"],
        "rubric": "Score correctness 1-5.",
        **extra,
    }


def judged(judges, fake, *, dims=None, **kwargs) -> CaseScoreDocument:
    dims = dims or [{"key": "q", "source": "llm_judge", "judge_key": judges[0]["key"]}]
    s = spec(dimensions=dims, judge_mode="hybrid", llm_judges=judges, **kwargs)
    return score_case(s, evidence("42"), judge=fake, secret_values=kwargs.pop("secrets", ["sk-SECRET"])).as_dict()


def reply(score=None, **kw) -> str:
    return json.dumps({"score": score, "confidence": "high", "reasoning": "ok", **kw})


def test_rubric_scores_are_normalised_and_median_aggregated():
    fake = FakeJudge([reply(5), reply(3), reply(4)])
    result = judged([rubric()], fake)
    judge = result["llm_judge_details"][0]
    assert judge["normalized_score"] == 0.75  # median 4 on 1..5
    assert judge["confidence"] == "single-model"
    assert judge["sample_count"] == 3 and len(fake.calls) == 3
    assert result["dimensions"]["q"]["score"] == 0.75


def test_fences_are_stripped():
    fake = FakeJudge(["```json\n" + reply(5) + "\n```"])
    assert judged([rubric(samples=1)], fake)["llm_judge_details"][0]["normalized_score"] == 1.0


def test_assertion_mode_uses_majority_with_ties_passing_and_expect_false_inverts():
    fake = FakeJudge([json.dumps({"pass": True}), json.dumps({"verdict": "fail"})])
    decl = {
        "key": "a",
        "mode": "assertion",
        "model": "gpt-4o",
        "samples": 2,
        "assertion": "It is polite.",
        "context_from": ["final_output"],
    }
    assert judged([decl], fake)["llm_judge_details"][0]["normalized_score"] == 1.0
    fake = FakeJudge([json.dumps({"pass": True})])
    assert judged([{**decl, "samples": 1, "expect": False}], fake)["llm_judge_details"][0]["normalized_score"] == 0.0


def test_consensus_across_models_and_disagreement_confidence():
    fake = FakeJudge({"claude-a": [reply(5)], "gpt-b": [reply(1)]})
    decl = rubric(model=None, models=["claude-a", "gpt-b"], samples=1, consensus={"aggregation": "mean", "flag_on_disagreement": True})
    judge = judged([decl], fake)["llm_judge_details"][0]
    assert judge["normalized_score"] == 0.5
    assert judge["confidence"] == "low"
    assert judge["variance"] == pytest.approx(0.25)
    assert any("disagree" in w for w in judge["payload"]["warnings"])


def test_agreeing_models_have_high_confidence():
    fake = FakeJudge({"claude-a": [reply(4)], "gpt-b": [reply(4)]})
    decl = rubric(model=None, models=["claude-a", "gpt-b"], samples=1, consensus={"aggregation": "median"})
    assert judged([decl], fake)["llm_judge_details"][0]["confidence"] == "high"


def test_unanimous_and_majority_vote_consensus():
    fake = FakeJudge(
        {"claude-a": [json.dumps({"pass": True})], "gpt-b": [json.dumps({"pass": False})], "gemini-c": [json.dumps({"pass": True})]}
    )
    decl = {
        "key": "a",
        "mode": "assertion",
        "models": ["claude-a", "gpt-b", "gemini-c"],
        "samples": 1,
        "assertion": "x",
        "context_from": ["final_output"],
    }
    assert judged([{**decl, "consensus": {"aggregation": "majority_vote"}}], fake)["llm_judge_details"][0]["normalized_score"] == 1.0
    assert judged([{**decl, "consensus": {"aggregation": "unanimous"}}], fake)["llm_judge_details"][0]["normalized_score"] == 0.0


def test_failed_calls_are_recorded_and_all_failed_means_unavailable():
    result = judged([rubric()], FakeJudge(["RAISE"]))
    judge = result["llm_judge_details"][0]
    assert judge["normalized_score"] is None
    assert "all judge calls failed" in judge["reason"]
    assert all(c["error"] for c in judge["payload"]["calls"])
    assert result["dimensions"]["q"]["state"] == "unavailable"


def test_unparseable_replies_are_call_errors_not_exceptions():
    judge = judged([rubric(samples=2)], FakeJudge(["no json here", reply(5)]))["llm_judge_details"][0]
    assert judge["normalized_score"] == 1.0
    assert judge["confidence"] == "low"  # a failed call is a warning


def test_output_schema_is_enforced():
    schema = {"type": "object", "required": ["score", "evidence_quote"]}
    judge = judged([rubric(samples=1, output_schema=schema)], FakeJudge([reply(5)]))["llm_judge_details"][0]
    assert judge["normalized_score"] is None
    assert "output_schema" in judge["payload"]["calls"][0]["error"]


def test_unavailable_context_skips_the_calls():
    fake = FakeJudge([reply(5)])
    judge = judged([rubric(context_from=["file:missing"])], fake)["llm_judge_details"][0]
    assert judge["state"] == "unavailable" and fake.calls == []


def test_judge_limits_cap_samples_and_tokens():
    fake = FakeJudge([reply(5)], tokens=100)
    judged([rubric(samples=5)], fake, scorecard={"judge_limits": {"max_samples_per_judge": 2}})
    assert len(fake.calls) == 2
    fake = FakeJudge([reply(5)], tokens=100)
    result = judged([rubric(samples=5)], fake, scorecard={"judge_limits": {"max_tokens": 250}})
    assert len(fake.calls) == 3
    assert any("max_tokens" in w for w in result["warnings"])


def test_secret_values_are_redacted_from_prompts():
    fake = FakeJudge([reply(5)])
    s = spec(dimensions=["correctness"], judge_mode="hybrid", llm_judges=[rubric(samples=1)])
    score_case(s, evidence("my key is sk-SECRET"), judge=fake, secret_values=["sk-SECRET"])
    prompt = fake.calls[0][1]
    assert "sk-SECRET" not in prompt and "[redacted]" in prompt
    assert "Return only JSON" in prompt and "Rubric:" in prompt and "Evaluation context:" in prompt


def test_pack_anti_gaming_clauses_are_appended():
    fake = FakeJudge([reply(5)])
    judged([rubric(samples=1, anti_gaming_clauses=["Penalise flattery."])], fake)
    assert "Penalise flattery." in fake.calls[0][1]


def test_reference_mode_appends_the_reference_answer():
    fake = FakeJudge([reply(5)])
    decl = {
        "key": "ref",
        "mode": "reference",
        "model": "gpt-4o",
        "samples": 1,
        "rubric": "Compare.",
        "reference_from": "case.expectations.answer",
        "context_from": ["final_output"],
    }
    judged([decl], fake)
    assert "reference_answer:\n42" in fake.calls[0][1]


def test_without_a_judge_llm_dimensions_are_unavailable_with_a_warning():
    s = spec(dimensions=[{"key": "q", "source": "llm_judge", "judge_key": "quality"}], judge_mode="hybrid", llm_judges=[rubric()])
    result = score_case(s, evidence("42")).as_dict()
    assert result["dimensions"]["q"]["state"] == "unavailable"
    assert any("no judge configured" in w for w in result["warnings"])


def test_n_wise_ranks_candidates_with_borda_scores_and_debiasing():
    decl = {
        "key": "rank",
        "mode": "n_wise",
        "model": "gpt-4o",
        "samples": 2,
        "prompt": "Which is best?",
        "position_debiasing": True,
        "context_from": ["final_output"],
    }
    fake = FakeJudge([json.dumps({"ranking": ["lane-b", "lane-a", "lane-c"]})])
    s = spec(judge_mode="llm_judge", llm_judges=[decl])
    results = run_nwise_judge(
        s, "rank", [("lane-a", evidence("a")), ("lane-b", evidence("b")), ("lane-c", evidence("c"))], fake, run_id="run-1"
    )
    assert {k: v["normalized_score"] for k, v in results.items()} == {"lane-a": 0.5, "lane-b": 1.0, "lane-c": 0.0}
    first, second = fake.calls[0][1], fake.calls[1][1]
    assert first.index("Candidate lane-a") < first.index("Candidate lane-b")
    assert second.index("Candidate lane-b") < second.index("Candidate lane-a")


def test_n_wise_rejects_incomplete_rankings_and_needs_two_candidates():
    decl = {"key": "rank", "mode": "n_wise", "model": "gpt-4o", "samples": 1, "prompt": "x", "context_from": ["final_output"]}
    s = spec(judge_mode="llm_judge", llm_judges=[decl])
    fake = FakeJudge([json.dumps({"ranked_ids": ["lane-a"]})])
    results = run_nwise_judge(s, "rank", [("lane-a", evidence("a")), ("lane-b", evidence("b"))], fake)
    assert results["lane-a"]["normalized_score"] is None
    assert run_nwise_judge(s, "rank", [("lane-a", evidence("a"))], fake)["lane-a"]["state"] == "unavailable"


def test_precomputed_judge_results_feed_dimensions():
    decl = {"key": "rank", "mode": "n_wise", "model": "gpt-4o", "prompt": "x", "context_from": ["final_output"]}
    s = spec(dimensions=[{"key": "r", "source": "llm_judge", "judge_key": "rank"}], judge_mode="llm_judge", llm_judges=[decl])
    result = score_case(s, evidence("42"), judge_results={"rank": cast(JudgeResult, {"judge_key": "rank", "normalized_score": 0.5})})
    assert result.as_dict()["dimensions"]["r"]["score"] == 0.5


def test_parse_json_reply_takes_the_outermost_object():
    assert parse_json_reply('Sure! {"score": 4, "x": {"y": 1}} thanks') == {"score": 4, "x": {"y": 1}}

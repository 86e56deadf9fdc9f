"""Judges name what they called, say "no judge configured", and skip a mismatch that never happened."""

from __future__ import annotations

import json

from engine.scoring import score_case
from engine.scoring.aggregate import aggregate_lane
from engine.scoring.compare import build_comparison
from engine.scoring.evidence import CaseEvidence
from engine.scoring.judges import JudgeNotConfigured, JudgeTarget
from engine.scoring.spec import EvaluationSpec
from engine.tests.scoring.helpers import FakeJudge, evidence, spec
from engine.types import ModelResponse, ProviderError

ASSERTION = {
    "key": "recovers",
    "mode": "assertion",
    "model": "claude-haiku-4-5",
    "samples": 1,
    "assertion": "After the mismatch the assistant recovers.",
    "context_from": ["transcript.from_mismatch"],
}
RUBRIC = {"key": "quality", "mode": "rubric", "model": "claude-sonnet-4-6", "samples": 2, "rubric": "1-5", "context_from": ["final_output"]}


class TargetedJudge(FakeJudge):
    """A judge that knows which deployment answers each model; models it lacks are not configured."""

    def __init__(self, replies, targets: dict[str, JudgeTarget]):
        super().__init__(replies)
        self.targets = targets

    def target(self, model: str) -> JudgeTarget | None:
        return self.targets.get(model)

    def __call__(self, model, messages):
        if model not in self.targets:
            raise JudgeNotConfigured(model)
        response = super().__call__(model, messages)
        target = self.targets[model]
        return ModelResponse(target.provider_key, target.model, "stop", response.output_text, usage=response.usage)


def turn_events(*turns: tuple[str, str, bool]) -> list[dict]:
    events, seq = [], 0
    for index, (user, assistant, mismatch) in enumerate(turns, 1):
        for etype, payload in (
            ("turn.user.message", {"turn_index": index, "message": user, "actor": "scripted"}),
            ("turn.assistant.message", {"turn_index": index, "message": assistant}),
            ("turn.completed", {"turn_index": index, "mismatch": mismatch}),
        ):
            seq += 1
            events.append({"event_id": f"e{seq}", "event_type": etype, "sequence_number": seq, "payload": payload})
    return events


def conversation(mismatch: bool) -> CaseEvidence:
    turns = [("refund?", "looking" if mismatch else "refund issued", mismatch)]
    if mismatch:
        turns.append(("wrong!", "sorry, refund today", False))
    return CaseEvidence(case_key="c", final_output=turns[-1][1], events=turn_events(*turns))


def hybrid_spec() -> EvaluationSpec:
    return spec(
        judge_mode="hybrid",
        llm_judges=[ASSERTION],
        behavioral={"signals": [{"key": "recovery_behavior", "weight": 1, "gate": True, "pass_threshold": 0.5}]},
        dimensions=[
            {"key": "recovery", "source": "behavioral", "gate": True, "pass_threshold": 0.5},
            {"key": "judge", "source": "llm_judge", "judge_key": "recovers"},
        ],
        scorecard={"strategy": "hybrid"},
    )


def test_a_judge_over_a_mismatch_that_never_happened_is_not_applicable_not_degraded():
    judge = FakeJudge([json.dumps({"pass": True})])
    result = score_case(hybrid_spec(), conversation(mismatch=False), judge=judge).as_dict()
    details = result["llm_judge_details"][0]
    assert details["state"] == "not_applicable" and "no mismatch" in details["reason"]
    assert judge.calls == []
    assert result["dimensions"]["judge"]["state"] == "not_applicable"
    assert result["status"] == "complete"
    # hybrid: the gate passed but the only other dimension does not apply, so nothing decided the
    # score: no score, no pass, and the case says why (issue 22: nothing evaluated is not 1.0).
    assert (result["overall_score"], result["passed"]) == (None, None)
    assert result["overall_reason"].startswith("every gate passed, but nothing decided the score: 'judge' is not_applicable")
    assert result["validity"] == "degraded"
    assert result["validity_reason"].startswith("the case has no score: every gate passed, but nothing decided the score")


def test_the_same_judge_runs_when_there_was_a_mismatch():
    judge = FakeJudge([json.dumps({"pass": True})])
    result = score_case(hybrid_spec(), conversation(mismatch=True), judge=judge).as_dict()
    assert result["llm_judge_details"][0]["normalized_score"] == 1.0
    assert "user: wrong!" in judge.calls[0][1]
    assert (result["overall_score"], result["passed"], result["validity"]) == (1.0, True, "valid")


def test_a_dimension_that_applies_to_no_case_rolls_up_as_not_applicable_and_compares_as_such():
    spec_ = hybrid_spec()
    cases = [score_case(spec_, conversation(mismatch=False), judge=FakeJudge([json.dumps({"pass": True})])) for _ in range(2)]
    card = aggregate_lane(spec_, cases, refs={"run_id": 1, "lane_id": 1})
    assert card["dimensions"]["judge"]["state"] == "not_applicable"
    # Not because of the judge dimension: the cases have no score (nothing decided it).
    assert card["validity"] == "degraded" and "the case has no score" in card["validity_reason"]
    assert (card["overall_score"], card["passed"], card["pass_rate"]) == (None, None, 0.0)
    comparison = build_comparison(card, card)
    assert comparison["dimension_deltas"]["judge"]["state"] == "not_applicable"
    assert "dimension_deltas.judge" not in comparison["evidence_quality"]["missing_fields"]


def test_a_judge_model_without_a_deployment_is_unavailable_with_no_judge_configured():
    judge = TargetedJudge([json.dumps({"score": 4})], targets={})
    result = score_case(
        spec(judge_mode="hybrid", llm_judges=[RUBRIC], dimensions=[{"key": "q", "source": "llm_judge", "judge_key": "quality"}]),
        evidence("42"),
        judge=judge,
    ).as_dict()
    details = result["llm_judge_details"][0]
    assert (details["state"], details["reason"]) == ("unavailable", "no judge configured")
    assert result["dimensions"]["q"]["state"] == "unavailable"
    assert "no judge configured" in result["dimensions"]["q"]["reason"]


def test_call_records_name_the_provider_and_model_actually_called():
    target = JudgeTarget(provider_key="scripted", model="scripted-judge", deployment="Judge A")
    judge = TargetedJudge([json.dumps({"score": 5})], targets={"claude-sonnet-4-6": target})
    result = score_case(
        spec(judge_mode="hybrid", llm_judges=[RUBRIC], dimensions=[{"key": "q", "source": "llm_judge", "judge_key": "quality"}]),
        evidence("42"),
        judge=judge,
    ).as_dict()
    call = result["llm_judge_details"][0]["payload"]["calls"][0]
    assert (call["model"], call["provider_key"], call["called_model"], call["deployment"]) == (
        "claude-sonnet-4-6",
        "scripted",
        "scripted-judge",
        "Judge A",
    )


def test_a_failed_judge_call_names_the_provider_that_was_called_not_one_inferred_from_the_model():
    class Failing(TargetedJudge):
        def __call__(self, model, messages):
            raise ProviderError("auth", "invalid api key")

    judge = Failing([], targets={"claude-sonnet-4-6": JudgeTarget("openai", "gpt-4.1", "Judge B")})
    result = score_case(
        spec(judge_mode="hybrid", llm_judges=[RUBRIC], dimensions=[{"key": "q", "source": "llm_judge", "judge_key": "quality"}]),
        evidence("42"),
        judge=judge,
    ).as_dict()
    details = result["llm_judge_details"][0]
    assert details["payload"]["calls"][0]["error"] == "openai: ProviderError: auth: invalid api key"
    assert "anthropic" not in details["reason"] and "openai" in details["reason"]

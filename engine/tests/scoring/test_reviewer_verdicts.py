"""Issue 22, items 2 and 3: verdicts that mean what a reviewer means.

- The agent did not deliver (no answer, a file never written, a reply without a tool call, a
  deadline) → the case fails and scores no more than a wrong answer; the gate can say ``fail``.
- The harness failed (a provider outage after retries, a sandbox or simulator failure, a judge
  that did not answer) → the case is unscored: ``insufficient_evidence``, never a pass or a fail.
- A regression that rests on low-confidence judge evidence alone (a split vote) → ``warn``.

Each scenario runs the whole scoring chain: ``score_case`` → ``aggregate_lane`` →
``build_comparison`` → ``evaluate_gate``.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from engine.scoring import score_case
from engine.scoring.aggregate import aggregate_lane
from engine.scoring.compare import build_comparison
from engine.scoring.gates import evaluate_gate
from engine.tests.scoring.helpers import Events, FakeJudge, evidence, spec

# A weighted scorecard like swe-bug-fix's: correctness from the answer, plus process dimensions a
# silent agent would otherwise collect for free.
SPEC = spec(
    validators=[{"key": "answer", "type": "exact_match", "target": "final_output", "expected_from": "literal:42"}],
    dimensions=[
        {"key": "correctness", "source": "validators", "validators": ["answer"], "weight": 0.5},
        {"key": "reliability", "source": "reliability", "weight": 0.25},
        {
            "key": "latency",
            "source": "latency",
            "weight": 0.25,
            "better_direction": "lower",
            "normalization": {"target": 1000, "max": 60000},
        },
    ],
)


def failed_events(stop_reason: str) -> list[Any]:
    return Events().add("system.run.started").add("system.run.failed", {"error": "stopped", "stop_reason": stop_reason}, 500).items


def silent(stop_reason: str = "agent_error") -> Any:
    return evidence(None, events=failed_events(stop_reason), status="failed", stop_reason=stop_reason)


def lane(spec_: Any, *cases: Any, judge: Any = None, lane_id: str = "x") -> Any:
    scores = [score_case(spec_, ev, judge=judge) for ev in cases]
    return aggregate_lane(spec_, scores, refs={"run_id": "r", "lane_id": lane_id, "pack_version_id": "p", "input_set_id": "i"})


def gate(baseline: Any, candidate: Any) -> Any:
    return evaluate_gate(build_comparison(baseline, candidate))


@pytest.mark.parametrize("stop", ["agent_error", "timeout", "step_limit", "tool_limit", "token_limit", "deadline_exceeded"])
def test_an_agent_that_delivered_nothing_fails_and_scores_no_more_than_a_wrong_answer(stop):
    nothing = score_case(SPEC, silent(stop)).as_dict()
    wrong = score_case(SPEC, evidence("41")).as_dict()
    assert nothing["passed"] is False and nothing["validity"] == "valid", nothing["validity_reason"]
    assert nothing["validator_details"][0]["verdict"] == "fail"
    assert "the agent did not deliver: final output is missing" in nothing["validator_details"][0]["reason"]
    # No credit for being fast or "reliable" at doing nothing.
    assert {k: d["score"] for k, d in nothing["dimensions"].items()} == {"correctness": 0.0, "reliability": 0.0, "latency": 0.0}
    assert nothing["overall_score"] == 0.0 <= wrong["overall_score"]


def test_a_completed_run_without_an_answer_is_the_agents_failure_too():
    completed_silently = Events().add("system.run.started").add("system.run.completed", {}, 500).items
    doc = score_case(SPEC, evidence(None, events=completed_silently)).as_dict()
    assert (doc["passed"], doc["overall_score"], doc["validity"]) == (False, 0.0, "valid")


@pytest.mark.parametrize("stop", ["provider_error", "sandbox_error", "simulator_error"])
def test_a_case_the_harness_stopped_is_unscored_not_failed(stop):
    doc = score_case(SPEC, silent(stop)).as_dict()
    assert (doc["passed"], doc["overall_score"]) == (None, None)
    assert doc["validity"] == "degraded" and f"the harness stopped the case ({stop})" in doc["validity_reason"]
    assert doc["validator_details"][0]["state"] == "unavailable"


def test_the_gate_fails_a_silent_candidate_and_says_insufficient_evidence_for_a_harness_outage():
    baseline = lane(SPEC, evidence("42"), lane_id="good")
    assert gate(baseline, lane(SPEC, silent("agent_error"), lane_id="silent"))["verdict"] == "fail"
    outage = gate(baseline, lane(SPEC, silent("provider_error"), lane_id="outage"))
    assert outage["verdict"] == "insufficient_evidence", outage["summary"]


def test_a_file_never_written_fails_its_check_and_a_lost_verification_does_not():
    checked = spec(
        validators=[{"key": "report", "type": "file_exists", "target": "file:report"}],
        dimensions=[{"key": "correctness", "source": "validators", "validators": ["report"]}],
        post_execution_checks=[{"key": "report", "type": "file_capture", "path": "/workspace/report.md"}],
    )
    never_written = evidence("done", captured_files={"report": {"path": "/workspace/report.md", "exists": False}})
    assert score_case(checked, never_written).as_dict()["passed"] is False
    # The run completed but verification left no record (the harness lost it): not the agent's fault.
    lost = score_case(checked, evidence("done")).as_dict()
    assert lost["passed"] is None and lost["validity"] == "degraded"


# -- judges --------------------------------------------------------------------------------------


def judge_spec(**dim: Any) -> Any:
    return spec(
        validators=[{"key": "answer", "type": "exact_match", "target": "final_output", "expected_from": "literal:42"}],
        dimensions=[
            {"key": "correctness", "source": "validators", "validators": ["answer"], "weight": 0.5},
            {"key": "faithful", "source": "llm_judge", "judge_key": "faithful", "weight": 0.5, **dim},
        ],
        judge_mode="hybrid",
        llm_judges=[
            {"key": "faithful", "mode": "assertion", "model": "m", "samples": 3, "context_from": ["final_output"], "assertion": "Faithful."}
        ],
        scorecard={"strategy": "weighted", "pass_threshold": 0.75},
    )


def verdict(value: bool) -> str:
    return json.dumps({"pass": value, "confidence": "high", "reasoning": "r"})


def test_a_case_whose_deciding_judge_failed_is_unscored_never_passed():
    broken = FakeJudge(["RAISE"])
    doc = score_case(judge_spec(), evidence("42"), judge=broken).as_dict()
    # correctness alone is 1.0, but the judge at 0 would fail the case: the judge decides.
    assert (doc["passed"], doc["overall_score"]) == (None, None)
    assert doc["overall_reason"].startswith("unscored:") and "'faithful'" in doc["overall_reason"]
    assert doc["validity"] == "degraded"


def test_a_judge_that_failed_but_could_not_change_the_verdict_leaves_the_verdict():
    broken = FakeJudge(["RAISE"])
    # a wrong answer fails whatever the judge would have said (0.5 * 0 + 0.5 * 1 < 0.75)
    doc = score_case(judge_spec(), evidence("41"), judge=broken).as_dict()
    assert doc["passed"] is False


def test_a_split_vote_is_low_confidence_and_a_fail_resting_on_it_is_marked():
    split = FakeJudge([verdict(False), verdict(True), verdict(False)])  # 1-2 against
    doc = score_case(judge_spec(), evidence("42"), judge=split).as_dict()
    judge = doc["llm_judge_details"][0]
    assert judge["confidence"] == "low" and "split vote" in " ".join(judge["payload"]["warnings"])
    assert doc["dimensions"]["faithful"]["low_confidence"] is True
    assert doc["passed"] is False and doc["verdict_confidence"] == "low"
    unanimous = score_case(judge_spec(), evidence("42"), judge=FakeJudge([verdict(False)])).as_dict()
    assert unanimous["passed"] is False and unanimous["verdict_confidence"] == "high"


def test_the_gate_warns_not_fails_on_a_regression_decided_by_a_split_vote():
    good = lane(judge_spec(), evidence("42"), judge=FakeJudge([verdict(True)]), lane_id="good")
    split = lane(judge_spec(), evidence("42"), judge=FakeJudge([verdict(False), verdict(True), verdict(False)]), lane_id="split")
    result = gate(good, split)
    assert result["verdict"] == "warn", result["summary"]
    conditions = {c["condition"]: c for c in result["triggered_conditions"]}
    assert conditions["case_regression_low_confidence"]["cases"] == ["case-1"]
    assert "threshold_low_confidence_faithful" in conditions
    assert "low-confidence judge evidence alone" in result["summary"]
    # The same regression on a unanimous verdict fails.
    unanimous = lane(judge_spec(), evidence("42"), judge=FakeJudge([verdict(False)]), lane_id="bad")
    assert gate(good, unanimous)["verdict"] == "fail"
    # A wrong answer beside the split vote fails on its own evidence.
    wrong_and_split = lane(judge_spec(), evidence("41"), judge=FakeJudge([verdict(False), verdict(True), verdict(False)]), lane_id="w")
    assert gate(good, wrong_and_split)["verdict"] == "fail"

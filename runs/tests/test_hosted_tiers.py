"""Evidence tiers (engine/scoring/tiers.py): a validator needing evidence a tier lacks is unavailable, with the reason."""

from __future__ import annotations

import pytest

from engine.scoring.evidence import CaseEvidence, extract
from engine.scoring.spec import ValidatorDeclaration
from engine.scoring.tiers import BLACK_BOX, NATIVE, STRUCTURED_TRACE, lane_tier, tier_gap
from engine.scoring.validators import run_validator
from engine.types import JSONObject
from runs.pipeline.hosted.attempt import evidence_tier

TOOL_CHECK: ValidatorDeclaration = {
    "key": "used_lookup",
    "type": "tool_call_assertion",
    "target": "tool_calls",
    "config": {"tool_name": "lookup", "must_call": True},
}
FILE_CHECK: ValidatorDeclaration = {"key": "wrote_file", "type": "file_exists", "target": "file:out.txt"}
ANSWER_CHECK: ValidatorDeclaration = {"key": "answer", "type": "exact_match", "target": "final_output", "expected_from": "literal:42"}
TRACE: list[JSONObject] = [
    {"event_id": "1", "event_type": "tool.call.completed", "sequence_number": 1, "payload": {"tool_name": "lookup", "arguments": {}}},
    {"event_id": "2", "event_type": "system.run.completed", "sequence_number": 2, "payload": {"final_output": "42"}},
]


def _result(declaration: ValidatorDeclaration, tier: str):
    evidence = CaseEvidence(case_key="c", final_output="42", events=TRACE, evidence_tier=tier)
    return run_validator(declaration, evidence, extract(evidence))


def test_a_black_box_agent_leaves_trace_validators_unavailable_with_the_reason():
    result = _result(TOOL_CHECK, BLACK_BOX)
    assert (result.state, result.outcome_class) == ("unavailable", "unavailable")
    assert "tool-call trace" in result.reason and "black box" in result.reason


def test_a_structured_trace_agent_is_judged_on_its_trace_but_not_on_files():
    assert _result(TOOL_CHECK, STRUCTURED_TRACE).verdict == "pass"
    files = _result(FILE_CHECK, STRUCTURED_TRACE)
    assert files.state == "unavailable" and "workspace files" in files.reason


@pytest.mark.parametrize("tier", [NATIVE, STRUCTURED_TRACE, BLACK_BOX])
def test_the_final_answer_is_judged_at_every_tier(tier):
    assert _result(ANSWER_CHECK, tier).verdict == "pass"


def test_native_evidence_is_not_limited():
    assert tier_gap(TOOL_CHECK, NATIVE) is None and tier_gap(FILE_CHECK, NATIVE) is None
    assert tier_gap({"type": "contains", "target": "file:x"}, STRUCTURED_TRACE)  # a file target needs the workspace too


def test_a_case_tier_comes_from_what_the_agent_reported_and_a_lane_takes_its_weakest():
    assert evidence_tier({"system.run.started", "system.output.finalized"}) == BLACK_BOX
    assert evidence_tier({"system.run.started", "tool.call.started"}) == STRUCTURED_TRACE
    assert lane_tier([STRUCTURED_TRACE, BLACK_BOX, STRUCTURED_TRACE]) == BLACK_BOX
    assert lane_tier([STRUCTURED_TRACE]) == STRUCTURED_TRACE

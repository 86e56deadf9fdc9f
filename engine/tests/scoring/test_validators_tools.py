from __future__ import annotations

from engine.scoring.evidence import extract
from engine.scoring.validators import run_validator
from engine.tests.scoring.helpers import Events, evidence


def trace() -> list:
    events = Events().add("system.run.started")
    events.tool("get_order", {"order_id": "ORD-1"})
    events.tool("issue_refund", {"order_id": "ORD-1", "amount": 49.99, "tags": ["a", "b"]}, failed=True)
    events.tool("issue_refund", {"order_id": "ORD-1", "amount": 49.99, "tags": ["a", "b"]})
    events.tool("submit", {"answer": "done"})
    events.add("system.run.completed", {"final_output": "done"})
    return events.items


def check(config, target="tool_calls"):
    ev = evidence("done", events=trace())
    return run_validator({"key": "t", "type": "tool_call_assertion", "target": target, "config": config}, ev, extract(ev))


def test_must_call_passes_when_a_successful_call_exists():
    result = check({"tool_name": "get_order", "must_call": True})
    assert result.verdict == "pass"
    assert result.evidence_event_id == "e2"


def test_must_call_false_fails_when_the_tool_was_called():
    assert check({"tool_name": "issue_refund", "must_call": False}).verdict == "fail"
    assert check({"tool_name": "delete_db", "must_call": False}).verdict == "pass"


def test_only_successful_calls_are_counted():
    assert check({"tool_name": "issue_refund", "count": 1}).verdict == "pass"
    assert check({"tool_name": "issue_refund", "min_count": 2}).verdict == "fail"
    assert check({"tool_name": "issue_refund", "max_count": 0}).verdict == "fail"


def test_arguments_contain_is_a_recursive_subset_with_unordered_arrays():
    assert check({"tool_name": "issue_refund", "arguments_contain": {"amount": 49.99, "tags": ["b"]}}).verdict == "pass"
    assert check({"tool_name": "issue_refund", "arguments_contain": {"amount": 10}}).verdict == "fail"


def test_ordered_tools_subsequence_and_exact():
    assert check({"ordered_tools": ["get_order", "issue_refund"]}).verdict == "pass"
    assert check({"ordered_tools": ["issue_refund", "get_order"]}).verdict == "fail"
    assert check({"ordered_tools": ["get_order", "issue_refund", "submit"], "order_mode": "exact"}).verdict == "pass"
    assert check({"ordered_tools": ["get_order", "submit"], "order_mode": "exact"}).verdict == "fail"


def test_broken_configs_are_pack_errors():
    assert check(None).outcome_class == "pack_error"
    assert check({}).outcome_class == "pack_error"
    assert check({"tool_name": "x", "count": 1, "min_count": 1}).outcome_class == "pack_error"
    assert check({"tool_name": "x", "min_count": 3, "max_count": 1}).outcome_class == "pack_error"
    assert check({"order_mode": "exact"}).outcome_class == "pack_error"
    assert check({"tool_name": "x", "wildcard": True}).outcome_class == "pack_error"
    assert check({"tool_name": "x"}, target="final_output").outcome_class == "pack_error"

from __future__ import annotations

import pytest

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


@pytest.mark.parametrize(
    ("config", "verdict", "reason"),
    [
        ({"tool_name": "get_order"}, "pass", "tool call assertions hold (1 matching call(s))"),
        ({"tool_name": "delete_db"}, "fail", "expected a successful call to delete_db"),
        ({"arguments_contain": {"order_id": "ORD-1"}}, "pass", "tool call assertions hold (2 matching call(s))"),
        (
            {"arguments_contain": {"order_id": "ORD-9"}},
            "fail",
            'expected a successful call to any tool with arguments ⊇ {"order_id":"ORD-9"}',
        ),
        ({"tool_name": "delete_db", "min_count": 0}, "pass", "tool call assertions hold (0 matching call(s))"),
        ({"tool_name": "submit", "must_call": False}, "fail", "expected no call to submit, saw 1"),
        ({"tool_name": "submit", "count": 2}, "fail", "expected exactly 2 call(s) to submit, saw 1"),
        ({"min_count": 4}, "fail", "expected at least 4 call(s) to any tool, saw 3"),
        ({"max_count": 2}, "fail", "expected at most 2 call(s) to any tool, saw 3"),
        ({"min_count": 1, "max_count": 3}, "pass", "tool call assertions hold (3 matching call(s))"),
        (
            {"ordered_tools": ["submit", "get_order"]},
            "fail",
            "tool order ['get_order', 'issue_refund', 'submit'] does not satisfy subsequence ['submit', 'get_order']",
        ),
        (
            {"ordered_tools": ["get_order"], "order_mode": "exact"},
            "fail",
            "tool order ['get_order', 'issue_refund', 'submit'] does not satisfy exact ['get_order']",
        ),
        ({"ordered_tools": ["get_order"], "order_mode": "subsequence"}, "pass", "tool call assertions hold (3 matching call(s))"),
        (
            {"tool_name": "submit", "must_call": False, "max_count": 0},
            "fail",
            "expected no call to submit, saw 1; expected at most 0 call(s) to submit, saw 1",
        ),
    ],
)
def test_tool_call_assertion_rules(config, verdict, reason):
    result = check(config)
    assert (result.verdict, result.reason) == (verdict, reason)


@pytest.mark.parametrize(
    "config",
    [
        {"tool_name": "x", "count": -1},
        {"tool_name": "x", "min_count": True},
        {"tool_name": "x", "max_count": 1.5},
        {"tool_name": "x", "count": 1, "max_count": 1},
        {"arguments_contain": ["a"]},
        {"ordered_tools": ["a"], "order_mode": "random"},
        {"ordered_tools": [], "order_mode": "exact"},
        {"ordered_tools": ["a", ""]},
        {"ordered_tools": "a"},
        {"must_call": None},
        {"order_mode": None},
    ],
)
def test_tool_call_assertion_config_errors(config):
    assert check(config).outcome_class == "pack_error"

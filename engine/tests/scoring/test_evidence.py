"""``extract``: what each event type contributes to a case's facts, and how explicit evidence wins."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pytest

from engine.scoring.evidence import (
    CaseEvidence,
    Extracted,
    ModelUsage,
    ToolTraceEntry,
    Turn,
    extract,
    loose_string,
    normalise_arguments,
    ordered_events,
    parse_time,
)
from engine.tests.scoring.helpers import Events, at
from engine.types import JSON


def when(ms: int) -> datetime:
    return datetime.fromisoformat(at(ms))


def extracted(events: Events, **evidence: Any) -> Extracted:
    return extract(CaseEvidence(case_key="c", events=events.items, **evidence))


def facts(result: Extracted, names: list[str]) -> dict[str, JSON]:
    return {name: getattr(result, name) for name in names}


PER_EVENT_TYPE = [
    pytest.param(
        Events().add("system.run.started", {"started_at": at(5)}, 10).add("system.run.started", {}, 20),
        {"start_at": when(5)},
        id="run started: payload time, first wins",
    ),
    pytest.param(Events().add("system.run.started", {}, 10), {"start_at": when(10)}, id="run started: event time"),
    pytest.param(
        Events()
        .add("system.step.started", {"step_index": 0}, 100)
        .add("system.step.started", {"step_index": 1}, 150)
        .add("system.step.completed", {"step_index": 1}, 400)
        .add("system.step.completed", {"step_index": 0}, 1100)
        .add("system.step.completed", {"step_index": 7}, 1200),
        {"step_durations_ms": [250.0, 1000.0]},
        id="steps: paired by index, unpaired completion ignored",
    ),
    pytest.param(
        Events().add("model.output.delta", {}, 300).add("model.output.delta", {}, 400),
        {"first_output_at": when(300), "final_output": None},
        id="output delta: first output time",
    ),
    pytest.param(
        Events().add("system.output.finalized", {"final_output": "a"}, 300).add("system.output.finalized", {"final_output": "b"}, 400),
        {"first_output_at": when(300), "final_output": "a", "final_output_event_id": "e1"},
        id="output finalized: first wins",
    ),
    pytest.param(
        Events().add("model.output.delta", {}, 100).add("system.output.finalized", {"output": {"text": "t"}}, 300),
        {"first_output_at": when(100), "final_output": "t", "final_output_event_id": "e2"},
        id="output finalized: loose output",
    ),
    pytest.param(
        Events()
        .add("system.run.started", {}, 0)
        .add("system.output.finalized", {"final_output": "draft"}, 100)
        .add(
            "system.run.completed",
            {"final_output": "done", "input_tokens": 3, "output_tokens": 4, "total_tokens": 9, "tool_call_count": 2, "latency_ms": 1500},
            2000,
        ),
        {
            "terminal_at": when(1500),
            "completed": True,
            "final_output": "done",
            "final_output_event_id": "e2",
            "input_tokens": 3,
            "output_tokens": 4,
            "total_tokens": 9,
            "tool_call_count": 2,
            "failure_count": 0,
        },
        id="run completed: outcome, tokens and latency",
    ),
    pytest.param(
        Events().add("system.run.completed", {"final_output": 5, "latency_ms": 10}, 2000),
        {"terminal_at": when(2000), "completed": True, "final_output": None, "final_output_event_id": None},
        id="run completed: no start, no string output",
    ),
    pytest.param(
        Events().add("system.run.failed", {}, 700).add("system.run.failed", {}, 900),
        {"terminal_at": when(900), "completed": False, "failure_count": 2},
        id="run failed",
    ),
    pytest.param(
        Events().tool("read", {"path": "a"}).tool("write", {"path": "b"}, failed=True, origin="tool"),
        {
            "tool_trace": [
                ToolTraceEntry("read", {"path": "a"}, '{"path":"a"}', False, None, None, "e1"),
                ToolTraceEntry("write", {"path": "b"}, '{"path":"b"}', True, "tool", "boom", "e2"),
            ],
            "failure_count": 1,
        },
        id="tool calls",
    ),
    pytest.param(
        Events().add(
            "tool.call.completed", {"tool_name": "x", "arguments": "not json", "result": {"is_error": True, "content": {"error": "e"}}}
        ),
        {"tool_trace": [ToolTraceEntry("x", "not json", '"not json"', True, None, "e", "e1")], "failure_count": 1},
        id="tool call: error result, raw arguments",
    ),
    pytest.param(
        Events().add("tool.call.failed", {"result": "oops"}),
        {"tool_trace": [ToolTraceEntry("", {}, "{}", True, None, None, "e1")], "failure_count": 1},
        id="tool call: bare failure",
    ),
    pytest.param(Events().add("sandbox.command.failed", {}), {"failure_count": 1}, id="sandbox command failed"),
    pytest.param(
        Events()
        .add("model.call.started", {"provider_key": "openai", "provider_model_id": "gpt-4o"})
        .add("model.call.completed", {"provider_key": "openai", "model": "gpt-4o", "usage": {"input_tokens": 2, "output_tokens": 3}})
        .add("model.call.completed", {"provider_key": "openai", "model": "gpt-4o", "usage": {"total_tokens": 10}})
        .add("model.call.completed", {"usage": {"input_tokens": 99}}),
        {"models": {("openai", "gpt-4o"): ModelUsage("openai", "gpt-4o", 2, 3, 15)}, "total_tokens": 15, "input_tokens": 2},
        id="model calls: usage per model",
    ),
    pytest.param(
        Events().add("model.call.started", {"model": "m"}),
        {"models": {("", "m"): ModelUsage("", "m")}},
        id="model call started registers the model",
    ),
    pytest.param(
        Events().add("race.standings.injected", {"tokens": 7}).add("race.standings.injected", {"token_count": 5}),
        {"race_context_tokens": 12},
        id="race standings",
    ),
    pytest.param(
        Events()
        .add("grader.verification.file_captured", {"key": "f", "content": "1"})
        .add("grader.verification.file_captured", {"key": "f", "content": "2"})
        .add("grader.verification.directory_listed", {"key": "d", "path": "/w"})
        .add("grader.verification.code_executed", {"validator_key": "v"})
        .add("grader.verification.code_executed", {})
        .add("grader.verification.other", {"key": "x"}),
        {
            "captured_files": {"f": {"key": "f", "content": "1"}},
            "directory_listings": {"d": {"key": "d", "path": "/w"}},
            "code_executions": {"v": {"validator_key": "v"}},
            "verification_event_ids": {"file:f": "e1", "file:d": "e3", "code:v": "e4"},
        },
        id="verification: first capture per key",
    ),
    pytest.param(
        Events()
        .add("turn.user.message", {"content": "hi", "phase_id": "open", "actor": "scripted"})
        .add("turn.assistant.message", {"text": "hello", "expectations": {"ok": True}})
        .add("turn.user.simulated", {"message": {"value": "more"}, "phase": "llm", "mismatch": 1})
        .add("turn.completed", {"expectations": "ignored"}),
        {
            "turns": [
                Turn("user", "hi", "scripted", "open", False, "e1"),
                Turn("assistant", "hello", None, None, False, "e2"),
                Turn("user", "more", None, "llm", True, "e3"),
            ],
            "turn_expectations": [{"ok": True}],
        },
        id="turns",
    ),
    pytest.param(
        Events().add("turn.state.captured", {"expectations": [1]}).add("turn.state.captured", {}),
        {"turn_expectations": [[1]], "turns": []},
        id="turn state captured",
    ),
    pytest.param(
        Events().add("something.else", {"final_output": "x"}).add("system.run.failed", "not a dict", 100),  # type: ignore[arg-type]
        {"final_output": None, "failure_count": 1, "terminal_at": when(100)},
        id="unknown types ignored, non-dict payload read as empty",
    ),
]


@pytest.mark.parametrize(("events", "expected"), PER_EVENT_TYPE)
def test_each_event_type_contributes_its_facts(events: Events, expected: dict[str, JSON]) -> None:
    assert facts(extracted(events), list(expected)) == expected


def test_latency_and_ttft_come_from_the_run_timeline() -> None:
    result = extracted(Events().add("system.run.started", {}, 0).add("model.output.delta", {}, 250).add("system.run.completed", {}, 1000))
    assert (result.latency_ms, result.ttft_ms) == (1000.0, 250.0)
    assert (Extracted().latency_ms, Extracted().ttft_ms) == (None, None)


def test_events_are_read_in_sequence_order_with_unsequenced_events_last() -> None:
    events: list[dict[str, JSON]] = [
        {"event_type": "b", "occurred_at": at(1)},
        {"event_type": "a", "occurred_at": at(1)},
        {"event_type": "s2", "sequence_number": 2},
        "garbage",  # type: ignore[list-item]
        {"event_type": "s1", "sequence_number": 1},
        {"event_type": "early", "occurred_at": at(0), "sequence_number": True},
    ]
    assert [e["event_type"] for e in ordered_events(events)] == ["s1", "s2", "early", "a", "b"]


@pytest.mark.parametrize(
    ("events", "evidence", "expected"),
    [
        pytest.param(
            Events(), {"final_output": "x", "status": "completed"}, {"final_output": "x", "completed": True}, id="explicit output"
        ),
        pytest.param(Events(), {"status": "failed"}, {"completed": False}, id="status when no run event"),
        pytest.param(Events().add("system.run.completed", {}), {"status": "cancelled"}, {"completed": False}, id="cancelled wins"),
        pytest.param(Events().add("system.run.completed", {}), {"status": "completed"}, {"completed": True}, id="run event kept"),
        pytest.param(
            Events(),
            {"usage": {"input_tokens": 2, "output_tokens": 3, "total_tokens": 7}},
            {"input_tokens": 2, "output_tokens": 3, "total_tokens": 7},
            id="explicit usage",
        ),
        pytest.param(
            Events().add("model.call.completed", {"model": "m", "usage": {"input_tokens": 2, "output_tokens": 3, "total_tokens": 6}}),
            {},
            {"input_tokens": 2, "output_tokens": 3, "total_tokens": 6},
            id="usage from model calls",
        ),
        pytest.param(
            Events().add("system.run.completed", {"input_tokens": 4, "output_tokens": 1}),
            {},
            {"input_tokens": 4, "output_tokens": 1, "total_tokens": 5},
            id="total from input and output",
        ),
        pytest.param(Events().tool("a").tool("b"), {}, {"tool_call_count": 2}, id="tool calls counted from the trace"),
        pytest.param(Events().tool("a"), {"tool_call_count": 0}, {"tool_call_count": 0}, id="explicit tool call count"),
        pytest.param(
            Events()
            .add("grader.verification.file_captured", {"key": "f", "v": 1})
            .add("grader.verification.code_executed", {"validator_key": "v"}),
            {"captured_files": {"f": {"v": 2}}, "code_executions": {"v": {"ok": True}}},
            {"captured_files": {"f": {"v": 2}}, "code_executions": {"v": {"ok": True}}},
            id="explicit verification results win",
        ),
        pytest.param(
            Events().add("grader.verification.directory_listed", {"key": "d", "path": "/w"}),
            {"directory_listings": {"d": [{"path": "/w/a"}], "e": [], "f": {"key": "f", "entries": []}}},
            {
                "directory_listings": {
                    "d": {"key": "d", "path": "/w", "entries": [{"path": "/w/a"}]},
                    "e": {"key": "e", "path": None, "entries": []},
                    "f": {"key": "f", "entries": []},
                }
            },
            id="bare listings keep the listed root",
        ),
    ],
)
def test_explicit_evidence_wins_over_what_events_imply(events: Events, evidence: dict[str, JSON], expected: dict[str, JSON]) -> None:
    assert facts(extracted(events, **evidence), list(expected)) == expected


@pytest.mark.parametrize(
    ("value", "parsed"),
    [(at(5), when(5)), ("2026-01-01T00:00:00Z", when(0)), ("yesterday", None), ("", None), (17, None)],
)
def test_it_parses_event_times_leniently(value: JSON, parsed: datetime | None) -> None:
    assert parse_time(value) == parsed


@pytest.mark.parametrize(
    ("value", "text"),
    [("a", "a"), ({"content": "b"}, "b"), ({"answer": 1, "text": "c"}, "c"), (["d"], "d"), (["d", "e"], None), (3, None)],
)
def test_it_reads_loose_strings(value: JSON, text: str | None) -> None:
    assert loose_string(value) == text


@pytest.mark.parametrize(("arguments", "normalised"), [('{"a": 1}', {"a": 1}), ("  ", {}), ("{", "{"), (None, {}), ([1], [1])])
def test_it_normalises_tool_arguments(arguments: JSON, normalised: JSON) -> None:
    assert normalise_arguments(arguments) == normalised

"""Test doubles for the agent loop: a toolset, an event recorder, a clock and a stub provider."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from engine.modes import CaseRequest
from engine.types import (
    EngineError,
    Event,
    ModelRequest,
    ModelResponse,
    ProviderError,
    ToolCall,
    ToolDefinition,
    ToolResult,
    Usage,
)

SECRET_EXPECTATION = "the-hidden-expected-answer-42"


class FakeToolset:
    """Echoes every call; ``submit`` follows the real contract (``answer`` required)."""

    def __init__(
        self,
        names: tuple[str, ...] = ("read_file", "write_file", "submit"),
        *,
        on_execute: Callable[[ToolCall], None] | None = None,
        failing: frozenset[str] = frozenset(),
        broken: frozenset[str] = frozenset(),
    ) -> None:
        self.names = set(names)
        self.known: frozenset[str] = frozenset()  # no names hidden by a policy unless a test says so
        self.calls: list[ToolCall] = []
        self._on_execute = on_execute
        self._failing = failing
        self._broken = broken

    def definitions(self) -> list[ToolDefinition]:
        return [ToolDefinition(name, f"the {name} tool", {"type": "object", "properties": {}}) for name in sorted(self.names)]

    def category(self, name: str) -> str:
        return {"read_file": "file", "write_file": "file", "submit": "submit"}.get(name, "unknown")

    def execute(self, call: ToolCall) -> ToolResult:
        self.calls.append(call)
        if self._on_execute is not None:
            self._on_execute(call)
        if call.name in self._broken:
            raise EngineError("sandbox transport closed")
        if call.name == "submit":
            answer = json.loads(call.arguments or "{}").get("answer", "")
            if not str(answer).strip():
                return ToolResult(content='{"error": "answer is required"}', is_error=True, tool_call_id=call.id)
            return ToolResult(content='{"submitted":true}', tool_call_id=call.id, submitted_answer=answer)
        if call.name in self._failing:
            return ToolResult(content='{"error": "boom"}', is_error=True, tool_call_id=call.id, failure_origin="primitive")
        return ToolResult(
            content=f"result of {call.name} {call.arguments}",
            tool_call_id=call.id,
            resolved_tool_name=call.name,
            resolved_tool_category="primitive",
        )


class Recorder:
    def __init__(self) -> None:
        self.events: list[Event] = []

    def __call__(self, event: Event) -> None:
        self.events.append(event)

    @property
    def types(self) -> list[str]:
        return [event.event_type for event in self.events]

    def of_type(self, event_type: str) -> list[Event]:
        return [event for event in self.events if event.event_type == event_type]

    def last(self, event_type: str) -> Event:
        return self.of_type(event_type)[-1]


class FakeClock:
    """A monotonic clock that only moves when told to (or when the loop sleeps)."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


def tool_response(*calls: tuple[str, dict], text: str = "", model: str = "stub-model") -> ModelResponse:
    tool_calls = [ToolCall(id=f"c{i}", name=name, arguments=json.dumps(args)) for i, (name, args) in enumerate(calls)]
    return ModelResponse(
        provider_key="stub",
        provider_model_id=model,
        finish_reason="tool_calls" if calls else "stop",
        output_text=text,
        tool_calls=tool_calls,
        usage=Usage(10, 2, 12),
    )


class StubProvider:
    """Replays a list of responses or ProviderErrors and records every request."""

    provider_key = "stub"

    def __init__(self, *replies: ModelResponse | ProviderError | Exception) -> None:
        self.replies = list(replies)
        self.requests: list[ModelRequest] = []

    def complete(self, request: ModelRequest) -> ModelResponse:
        self.requests.append(request)
        reply = self.replies.pop(0) if self.replies else tool_response(text="out of replies")
        if isinstance(reply, Exception):
            raise reply
        return reply


def make_request(**overrides) -> CaseRequest:
    profile = {"max_iterations": 10, "max_tool_calls": 0, "step_timeout_seconds": 30, "run_timeout_seconds": 300}
    profile.update(overrides.pop("runtime_profile", {}))
    values: dict[str, Any] = dict(
        execution_mode="native",
        run_id="run-1",
        lane_id="lane-1",
        case_key="case-a",
        event_id_prefix="native:lane-1:case-a:1",
        model="stub-model",
        system_prompt="You are a careful agent.",
        output_schema=None,
        manifest={
            "pack": {"slug": "demo"},
            "version": {"number": 1, "evaluation_spec": {"validators": [{"expected_from": SECRET_EXPECTATION}]}},
        },
        challenge={"key": "ch-1", "title": "Find the answer", "instructions": "Find the answer for {{order_id}}."},
        case={
            "case_key": "case-a",
            "challenge_key": "ch-1",
            "payload": {"order_id": "ORD-1"},
            "inputs": [{"key": "question", "kind": "text", "value": "What is it?"}],
            "expectations": [{"key": "answer", "kind": "text", "value": SECRET_EXPECTATION}],
        },
        deployment_config={},
        runtime_profile=profile,
    )
    values.update(overrides)
    return CaseRequest(**values)

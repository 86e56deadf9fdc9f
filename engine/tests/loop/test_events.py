from __future__ import annotations

import json
import re
from typing import Any

from engine.modes import run_case
from engine.providers import create_provider
from engine.tests.loop.fakes import (
    SECRET_EXPECTATION,
    FakeClock,
    FakeToolset,
    Recorder,
    StubProvider,
    make_request,
    tool_response,
)


def run_scripted(steps, request=None):
    request = request or make_request()
    provider = create_provider(
        "scripted", api_key=None, base_url=None, deployment_config={"script": {"default": steps}}, case_key=request.case_key
    )
    recorder, clock = Recorder(), FakeClock()
    outcome = run_case(
        request, provider=provider, toolset=FakeToolset(), event_sink=recorder, cancel_check=lambda: False, clock=clock, sleep=clock.sleep
    )
    return outcome, recorder


def test_it_emits_the_native_event_sequence_for_a_completed_case():
    _, recorder = run_scripted([{"tool": "read_file", "args": {"path": "a"}}, {"submit": "42"}])
    assert recorder.types == [
        "system.run.started",
        "system.step.started",
        "model.call.started",
        "model.call.completed",
        "tool.call.started",
        "tool.call.completed",
        "system.step.completed",
        "system.step.started",
        "model.call.started",
        "model.call.completed",
        "tool.call.started",
        "tool.call.completed",
        "system.step.completed",
        "system.run.completed",
    ]


def test_a_streamed_call_reports_its_first_delta_between_started_and_completed():
    request = make_request()
    provider = create_provider(
        "scripted",
        api_key=None,
        base_url=None,
        deployment_config={"script": {"default": [{"tool": "read_file", "args": {"path": "a"}}, {"submit": "42"}]}, "stream": True},
        case_key=request.case_key,
    )
    recorder, clock = Recorder(), FakeClock()
    run_case(
        request, provider=provider, toolset=FakeToolset(), event_sink=recorder, cancel_check=lambda: False, clock=clock, sleep=clock.sleep
    )
    types = recorder.types
    assert types.count("model.output.delta") == 2
    assert types[types.index("model.output.delta") - 1] == "model.call.started"
    assert types[types.index("model.output.delta") + 1] == "model.call.completed"
    delta: Any = recorder.of_type("model.output.delta")[0].payload
    assert delta["stream_kind"] == "tool_call" and delta["tool_call_fragment"]["name_fragment"] == "read_file"


def test_it_numbers_event_ids_with_the_callers_prefix():
    _, recorder = run_scripted([{"submit": "42"}])
    ids = [event.event_id for event in recorder.events]
    assert ids[0] == "native:lane-1:case-a:1:system.run.started:1"
    assert ids[-1] == f"native:lane-1:case-a:1:system.run.completed:{len(ids)}"
    assert len(set(ids)) == len(ids)


def test_it_produces_the_same_ids_when_a_case_is_replayed():
    first = [e.event_id for e in run_scripted([{"tool": "read_file"}, {"submit": "x"}])[1].events]
    second = [e.event_id for e in run_scripted([{"tool": "read_file"}, {"submit": "x"}])[1].events]
    assert first == second


def test_every_event_has_source_case_key_time_and_a_json_payload():
    _, recorder = run_scripted([{"tool": "read_file"}, {"submit": "42"}])
    for event in recorder.events:
        assert event.source == "native_engine"
        assert event.case_key == "case-a" and event.payload["case_key"] == "case-a"
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", event.occurred_at)
        json.dumps(event.payload)


def test_it_fills_the_documented_payloads():
    outcome, recorder = run_scripted([{"tool": "read_file", "args": {"path": "a"}}, {"submit": "42"}])
    started = recorder.last("system.run.started").payload
    assert started["execution_target"] == "native" and "started_at" in started
    call = recorder.of_type("model.call.started")[0].payload
    assert call["provider_key"] == "scripted" and call["message_count"] == 2 and call["tool_definition_count"] == 3
    assert call["step_timeout_ms"] == 30000 and call["metadata"]["run_id"] == "run-1"
    completed = recorder.of_type("model.call.completed")[0].payload
    assert completed["tool_calls"] == [{"id": "call_1_1", "name": "read_file", "arguments": '{"path": "a"}'}]
    assert set(completed["usage"]) == {"input_tokens", "output_tokens", "total_tokens"}
    tool = recorder.of_type("tool.call.completed")[0].payload
    assert tool["tool_name"] == "read_file" and tool["arguments"] == {"path": "a"} and tool["tool_category"] == "file"
    assert tool["result"]["is_error"] is False and tool["resolved_tool_name"] == "read_file"
    assert recorder.last("system.step.completed").payload["step_index"] == 2
    run_completed = recorder.last("system.run.completed").payload
    assert run_completed["final_output"] == "42" and run_completed["stop_reason"] == "completed"
    assert run_completed["step_count"] == 2 and run_completed["tool_call_count"] == 1
    assert run_completed["total_tokens"] == outcome.usage.total_tokens > 0


def test_it_marks_a_failed_tool_call_as_tool_call_failed():
    recorder, clock = Recorder(), FakeClock()
    provider = StubProvider(tool_response(("read_file", {})), tool_response(("submit", {"answer": "a"})))
    run_case(
        make_request(),
        provider=provider,
        toolset=FakeToolset(failing=frozenset({"read_file"})),
        event_sink=recorder,
        cancel_check=lambda: False,
        clock=clock,
        sleep=clock.sleep,
    )
    failed: Any = recorder.last("tool.call.failed").payload
    assert failed["result"]["is_error"] is True and failed["failure_origin"] == "primitive"


def test_it_reports_the_failing_step_in_system_run_failed():
    _, recorder = run_scripted([{"tool": "read_file"}, {"text": "no tool"}])
    failed = recorder.last("system.run.failed").payload
    assert failed["step_index"] == 2 and failed["stop_reason"] == "agent_error"


def test_no_event_carries_expectations():
    _, recorder = run_scripted([{"tool": "read_file"}, {"submit": "42"}])
    dumped = json.dumps([event.payload for event in recorder.events])
    assert SECRET_EXPECTATION not in dumped and "expectations" not in dumped

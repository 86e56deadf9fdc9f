"""``model.call.started`` records what the model received: the first call its whole input, each
later call the messages added since the previous one (``messages_from`` says where they start)."""

from __future__ import annotations

from typing import Any

from engine.modes import run_case
from engine.providers import create_provider
from engine.tests.loop.fakes import FakeClock, FakeToolset, Recorder, make_request


def run_scripted(steps, **overrides):
    request = make_request(**overrides)
    provider = create_provider(
        "scripted", api_key=None, base_url=None, deployment_config={"script": {"default": steps}}, case_key=request.case_key
    )
    recorder, clock = Recorder(), FakeClock()
    run_case(
        request, provider=provider, toolset=FakeToolset(), event_sink=recorder, cancel_check=lambda: False, clock=clock, sleep=clock.sleep
    )
    return recorder


def test_each_model_call_records_the_messages_added_since_the_previous_one():
    recorder = run_scripted([{"tool": "read_file", "args": {"path": "a.txt"}}, {"submit": "42"}])
    first, second = (event.payload for event in recorder.of_type("model.call.started"))

    assert first["messages_from"] == 0
    assert {m["role"] for m in first["messages"]} <= {"system", "user"} and first["messages"][-1]["role"] == "user"
    assert first["message_count"] == len(first["messages"])

    assert second["messages_from"] == first["message_count"]
    assistant, tool = second["messages"]
    assert assistant["role"] == "assistant" and assistant["tool_calls"][0]["name"] == "read_file"
    assert assistant["tool_calls"][0]["arguments"] == '{"path": "a.txt"}'
    assert tool == {"role": "tool", "content": 'result of read_file {"path": "a.txt"}', "tool_call_id": assistant["tool_calls"][0]["id"]}
    assert second["message_count"] == second["messages_from"] + 2


def test_the_recorded_messages_add_up_to_what_the_provider_received():
    seen = []

    class Spy:
        provider_key = "spy"

        def __init__(self, inner):
            self.inner = inner

        def complete(self, request):
            seen.append([(m.role, m.content) for m in request.messages])
            return self.inner.complete(request)

    request = make_request()
    inner = create_provider(
        "scripted",
        api_key=None,
        base_url=None,
        deployment_config={
            "script": {"default": [{"tool": "read_file", "args": {"path": "a"}}, {"tool": "write_file", "args": {}}, {"submit": "x"}]}
        },
        case_key=request.case_key,
    )
    recorder, clock = Recorder(), FakeClock()
    run_case(
        request, provider=Spy(inner), toolset=FakeToolset(), event_sink=recorder, cancel_check=lambda: False, clock=clock, sleep=clock.sleep
    )

    conversation: list[tuple[str, str]] = []
    for event, received in zip(recorder.of_type("model.call.started"), seen, strict=True):
        payload: Any = event.payload
        start = payload["messages_from"]
        conversation = conversation[:start] + [(m["role"], m["content"]) for m in payload["messages"]]
        assert conversation == received


def test_prompt_eval_records_its_prompt():
    recorder = run_scripted([{"text": "the answer"}], execution_mode="prompt_eval")
    (started,) = recorder.of_type("model.call.started")
    assert started.payload["messages_from"] == 0
    assert started.payload["messages"][-1]["role"] == "user"

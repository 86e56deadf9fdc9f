"""The OpenAI Responses adapter against a loopback server speaking the Responses wire format."""

from __future__ import annotations

import json

import pytest

from engine.modes import run_case
from engine.providers import create_provider
from engine.providers.openai_responses import OpenAIResponsesProvider
from engine.tests.loop.fakes import FakeClock, FakeToolset, Recorder, make_request
from engine.tests.providers.builders import model_request, tool_turn
from engine.tests.providers.fake_server import Reply
from engine.types import ProviderError

API_KEY = "sk-test-secret-key-123456"
USAGE = {
    "input_tokens": 120,
    "input_tokens_details": {"cached_tokens": 20},
    "output_tokens": 45,
    "output_tokens_details": {"reasoning_tokens": 30},
    "total_tokens": 165,
}
REASONING = {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "The note is in notes.txt."}]}
HIDDEN = "gAAAA-encrypted-reasoning-never-recorded"


def provider_for(server, **config):
    return create_provider(
        "openai",
        api_key=API_KEY,
        base_url=server.url + "/v1",
        deployment_config=config,
        http_timeout=30,
        allow_private_urls=True,
        api="responses",
    )


def request(**overrides):
    return model_request({"model": "o4-test", "messages": tool_turn("read the note", "looking")}, overrides)


def function_call(call_id="call_a", name="read_file", arguments='{"path": "notes.txt"}', item_id="fc_1"):
    return {"type": "function_call", "id": item_id, "call_id": call_id, "name": name, "arguments": arguments, "status": "completed"}


def response_body(output, *, status="completed", usage=None, **extra):
    return {
        "id": "resp_1",
        "object": "response",
        "created_at": 1,
        "model": "o4-test-2025",
        "status": status,
        "output": output,
        "usage": usage if usage is not None else USAGE,
        **extra,
    }


def event(kind, **body):
    return (kind, {"type": kind, **body})


def tool_call_stream(*, completed=True, final_output=None):
    call = function_call()
    events = [
        event("response.created", response=response_body([], status="in_progress", usage={})),
        event("response.output_item.added", output_index=0, item={"type": "reasoning", "id": "rs_1", "summary": []}),
        event("response.reasoning_summary_text.delta", output_index=0, item_id="rs_1", delta="The note is"),
        event("response.output_item.done", output_index=0, item={**REASONING, "encrypted_content": HIDDEN}),
        event("response.output_item.added", output_index=1, item={**call, "arguments": "", "status": "in_progress"}),
        event("response.function_call_arguments.delta", output_index=1, item_id="fc_1", delta='{"path": '),
        event("response.function_call_arguments.delta", output_index=1, item_id="fc_1", delta='"notes.txt"}'),
        event("response.function_call_arguments.done", output_index=1, item_id="fc_1", arguments=call["arguments"]),
        event("response.output_item.done", output_index=1, item=call),
    ]
    if completed:
        output = final_output if final_output is not None else [{**REASONING, "encrypted_content": HIDDEN}, call]
        events.append(event("response.completed", response=response_body(output)))
    return Reply.sse(events)


def test_it_sends_the_history_as_responses_input_items_and_function_tools(server):
    server.replies.append(tool_call_stream())
    provider_for(server, temperature=0.2).complete(request())
    sent = server.requests[0]
    assert sent.path == "/v1/responses"
    assert sent.headers["authorization"] == f"Bearer {API_KEY}"
    body = sent.body
    assert body["model"] == "o4-test" and body["stream"] is True and body["store"] is False and body["temperature"] == 0.2
    assert body["input"] == [
        {"type": "message", "role": "system", "content": "be brief"},
        {"type": "message", "role": "user", "content": "read the note"},
        {"type": "message", "role": "assistant", "content": "looking"},
        {"type": "function_call", "call_id": "call_0", "name": "read_file", "arguments": '{"path": "a"}'},
        {"type": "function_call_output", "call_id": "call_0", "output": "file body"},
    ]
    assert body["tools"][0] == {
        "type": "function",
        "name": "read_file",
        "description": "Read a file",
        "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
    }
    assert body["tools"][1]["parameters"] == {"type": "object", "properties": {}}
    assert "reasoning" not in body  # only sent when the deployment asks for it


def test_it_reads_a_streamed_function_call_reasoning_summary_and_usage(server):
    server.replies.append(tool_call_stream())
    deltas: list[dict] = []
    response = provider_for(server).complete(request(on_delta=deltas.append))
    assert [(c.id, c.name, json.loads(c.arguments)) for c in response.tool_calls] == [("call_a", "read_file", {"path": "notes.txt"})]
    assert response.finish_reason == "tool_calls" and response.provider_model_id == "o4-test-2025"
    assert (response.usage.input_tokens, response.usage.output_tokens, response.usage.total_tokens) == (120, 45, 165)
    assert response.raw_response["usage"]["reasoning_tokens"] == 30 and response.raw_response["usage"]["cached_tokens"] == 20
    assert response.reasoning == [{"item_id": "rs_1", "summary": ["The note is in notes.txt."], "reasoning_tokens": 30}]
    assert HIDDEN not in json.dumps(response.reasoning) + json.dumps(response.raw_response)
    # The first meaningful delta is the function call's name, once.
    assert len(deltas) == 1 and deltas[0]["tool_call_fragment"]["name_fragment"] == "read_file"


def test_it_falls_back_to_the_streamed_items_when_the_terminal_event_has_no_output(server):
    server.replies.append(tool_call_stream(final_output=[]))
    response = provider_for(server).complete(request())
    assert [c.name for c in response.tool_calls] == ["read_file"]
    assert response.reasoning[0]["summary"] == ["The note is in notes.txt."]


def test_a_stream_that_ends_without_response_completed_is_malformed(server):
    server.replies.append(tool_call_stream(completed=False))
    with pytest.raises(ProviderError) as info:
        provider_for(server).complete(request())
    assert info.value.code == "malformed_response"


def test_non_streaming_mode_reads_one_json_response(server):
    message = {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "all done", "annotations": []}]}
    server.replies.append(Reply.json(200, response_body([message], usage={"input_tokens": 9, "output_tokens": 2, "total_tokens": 11})))
    response = provider_for(server, stream=False, reasoning_effort="low").complete(request())
    body = server.requests[0].body
    assert body["stream"] is False and body["reasoning"] == {"summary": "auto", "effort": "low"}
    assert (response.output_text, response.finish_reason, response.tool_calls) == ("all done", "stop", [])
    assert (response.usage.input_tokens, response.usage.output_tokens, response.usage.total_tokens) == (9, 2, 11)
    assert response.reasoning == []


def test_an_incomplete_response_reports_why(server):
    message = {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "trunc"}]}
    body = response_body([message], status="incomplete", incomplete_details={"reason": "max_output_tokens"})
    server.replies.append(Reply.json(200, body))
    response = provider_for(server, stream=False).complete(request())
    assert response.finish_reason == "max_tokens" and response.raw_response["incomplete_reason"] == "max_output_tokens"


def test_a_failed_response_in_the_stream_is_a_classified_error(server):
    failed = response_body([], status="failed", error={"code": "server_error", "message": "boom"})
    created = event("response.created", response=response_body([], status="in_progress"))
    server.replies.append(Reply.sse([created, event("response.failed", response=failed)]))
    with pytest.raises(ProviderError) as info:
        provider_for(server).complete(request())
    assert (info.value.code, info.value.retryable) == ("unavailable", True)
    assert "boom" in info.value.message


def test_an_error_event_in_the_stream_is_a_classified_error(server):
    server.replies.append(Reply.sse([event("error", code="rate_limit_exceeded", message="slow down", param=None)]))
    with pytest.raises(ProviderError) as info:
        provider_for(server).complete(request())
    assert (info.value.code, info.value.retryable) == ("rate_limit", True)


def test_http_errors_are_classified_and_never_leak_the_key(server):
    server.replies.append(Reply.json(401, {"error": {"message": f"bad key {API_KEY}", "type": "invalid_request_error"}}))
    with pytest.raises(ProviderError) as info:
        provider_for(server).complete(request())
    assert info.value.code == "auth" and API_KEY not in info.value.message


def test_invalid_function_call_arguments_are_malformed(server):
    server.replies.append(Reply.json(200, response_body([function_call(arguments="{not json")])))
    with pytest.raises(ProviderError) as info:
        provider_for(server, stream=False).complete(request())
    assert info.value.code == "malformed_response"


def test_only_responses_capable_providers_get_a_responses_adapter():
    broken = create_provider("anthropic", api_key="k", base_url=None, deployment_config={}, api="responses")
    with pytest.raises(ProviderError) as info:
        broken.complete(request())
    assert info.value.code == "unsupported_capability" and "Responses API" in info.value.message
    custom = create_provider("custom", api_key=None, base_url="http://127.0.0.1:9/v1", deployment_config={}, api="responses")
    assert isinstance(custom, OpenAIResponsesProvider)
    chat = create_provider("openai", api_key="k", base_url=None, deployment_config={})
    assert not isinstance(chat, OpenAIResponsesProvider)


def test_a_responses_case_runs_the_native_loop_and_records_reasoning_events(server):
    submit = function_call(call_id="call_s", name="submit", arguments='{"answer": "done"}', item_id="fc_2")
    last = Reply.sse([event("response.completed", response=response_body([submit], usage={"input_tokens": 200, "output_tokens": 10}))])
    server.replies.extend([tool_call_stream(), last])
    recorder, clock = Recorder(), FakeClock()
    outcome = run_case(
        make_request(execution_mode="responses", runtime_profile={"max_iterations": 5}),
        provider=provider_for(server),
        toolset=FakeToolset(),
        event_sink=recorder,
        cancel_check=lambda: False,
        clock=clock,
        sleep=clock.sleep,
    )
    assert (outcome.status, outcome.final_output, outcome.step_count) == ("completed", "done", 2)
    assert (outcome.usage.input_tokens, outcome.usage.output_tokens, outcome.usage.total_tokens) == (320, 55, 375)
    assert {e.source for e in recorder.events} == {"responses_engine"}
    reasoning = recorder.of_type("model.reasoning")
    assert [e.payload["summary_text"] for e in reasoning] == ["The note is in notes.txt."]
    assert reasoning[0].payload["reasoning_tokens"] == 30 and reasoning[0].payload["step_index"] == 1
    assert [e.payload["tool_name"] for e in recorder.of_type("tool.call.completed")] == ["read_file", "submit"]
    # The tool result went back as a function_call_output item with the model's call id.
    second_input = server.requests[1].body["input"]
    outputs = [item for item in second_input if item.get("type") == "function_call_output"]
    assert [item["call_id"] for item in outputs] == ["call_a"] and "read_file" in outputs[0]["output"]
    assert HIDDEN not in json.dumps([e.payload for e in recorder.events])

from __future__ import annotations

import json
from typing import Any

import pytest

from engine.providers import create_provider
from engine.tests.providers.builders import (
    REFUSING_URL,
    assert_refused_connection_is_retryable_unavailable,
    assert_slow_answer_is_retryable_timeout,
    model_request,
    tool_turn,
)
from engine.tests.providers.fake_server import Reply
from engine.types import ProviderError

API_KEY = "sk-test-secret-key-123456"


def provider_for(server):
    return create_provider(
        "openai", api_key=API_KEY, base_url=server.url + "/v1", deployment_config={}, http_timeout=30, allow_private_urls=True
    )


def request(**overrides):
    return model_request({"model": "gpt-test", "messages": tool_turn()}, overrides)


def chunk(delta=None, finish=None, usage=None):
    body = {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "gpt-test-2025",
        "choices": [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    if usage:
        body["usage"] = usage
    return (None, body)


USAGE = {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18}


def tool_call_stream():
    return Reply.sse(
        [
            chunk(
                {
                    "role": "assistant",
                    "tool_calls": [{"index": 0, "id": "call_a", "type": "function", "function": {"name": "read_file", "arguments": ""}}],
                }
            ),
            chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"path":'}}]}),
            chunk({"tool_calls": [{"index": 0, "function": {"arguments": ' "b.txt"}'}}]}),
            chunk(
                {
                    "tool_calls": [
                        {"index": 1, "id": "call_b", "type": "function", "function": {"name": "submit", "arguments": '{"answer": "x"}'}}
                    ]
                }
            ),
            chunk({}, finish="tool_calls"),
            chunk(None, usage=USAGE),
            (None, "[DONE]"),
        ]
    )


def test_it_streams_tool_calls_and_usage(server):
    server.replies.append(tool_call_stream())
    deltas: list[dict[str, Any]] = []
    response = provider_for(server).complete(request(on_delta=deltas.append))
    assert [(c.id, c.name, json.loads(c.arguments)) for c in response.tool_calls] == [
        ("call_a", "read_file", {"path": "b.txt"}),
        ("call_b", "submit", {"answer": "x"}),
    ]
    assert (response.usage.input_tokens, response.usage.output_tokens, response.usage.total_tokens) == (11, 7, 18)
    assert response.finish_reason == "tool_calls" and response.provider_model_id == "gpt-test-2025"
    assert deltas == [
        {
            "provider_key": "openai",
            "provider_model_id": "gpt-test-2025",
            "stream_kind": "tool_call",
            "tool_call_fragment": {"index": 0, "id_fragment": "call_a", "name_fragment": "read_file", "arguments_fragment": ""},
        }
    ]


def test_it_sends_the_chat_completions_wire_shape(server):
    server.replies.append(tool_call_stream())
    provider_for(server).complete(request())
    sent = server.requests[0]
    assert sent.path == "/v1/chat/completions"
    assert sent.headers["authorization"] == f"Bearer {API_KEY}"
    assert sent.body["stream"] is True and sent.body["stream_options"] == {"include_usage": True}
    assert sent.body["messages"][2] == {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": "call_0", "type": "function", "function": {"name": "read_file", "arguments": '{"path": "a"}'}}],
    }
    assert sent.body["messages"][3] == {"role": "tool", "tool_call_id": "call_0", "content": "file body"}
    assert sent.body["tools"][1] == {
        "type": "function",
        "function": {"name": "submit", "description": "Submit", "parameters": {"type": "object", "properties": {}}},
    }


def test_it_returns_a_text_answer_and_reports_the_first_text_delta(server):
    server.replies.append(
        Reply.sse(
            [
                chunk({"role": "assistant", "content": ""}),
                chunk({"content": "Hel"}),
                chunk({"content": "lo"}, finish="stop"),
                (None, "[DONE]"),
            ]
        )
    )
    deltas: list[dict[str, Any]] = []
    response = provider_for(server).complete(request(tools=[], on_delta=deltas.append))
    assert response.output_text == "Hello" and response.tool_calls == []
    assert [d["text_delta"] for d in deltas] == ["Hel"]
    assert "tools" not in server.requests[0].body


def test_it_classifies_429_as_retryable_rate_limit_with_retry_after(server):
    server.replies.append(Reply.json(429, {"error": {"message": "Rate limit reached", "type": "requests"}}, {"Retry-After": "7"}))
    with pytest.raises(ProviderError) as caught:
        provider_for(server).complete(request())
    assert (caught.value.code, caught.value.retryable, caught.value.retry_after) == ("rate_limit", True, 7.0)
    assert len(server.requests) == 1  # the SDK's own retries are off


@pytest.mark.parametrize(
    ("status", "code", "retryable"),
    [
        (503, "unavailable", True),
        (502, "unavailable", True),
        (500, "unknown", True),
        (400, "invalid_request", False),
        (422, "invalid_request", False),
        (403, "auth", False),
        (404, "unknown", False),
    ],
)
def test_it_classifies_http_errors(server, status, code, retryable):
    server.replies.append(Reply.json(status, {"error": {"message": "nope"}}))
    with pytest.raises(ProviderError) as caught:
        provider_for(server).complete(request())
    assert (caught.value.code, caught.value.retryable) == (code, retryable)


def test_it_never_puts_the_api_key_in_an_auth_error(server):
    server.replies.append(Reply.json(401, {"error": {"message": f"Incorrect API key provided: {API_KEY}"}}))
    with pytest.raises(ProviderError) as caught:
        provider_for(server).complete(request())
    assert caught.value.code == "auth" and not caught.value.retryable
    assert API_KEY not in caught.value.message and API_KEY not in str(caught.value)


@pytest.mark.parametrize(
    "reply",
    [
        Reply.json(200, {"id": "x", "choices": []}),  # not a stream
        Reply.sse([(None, "{not json")]),
        Reply.sse(
            [chunk({"tool_calls": [{"index": 0, "id": "c", "function": {"name": "read_file", "arguments": "{bad"}}]}), (None, "[DONE]")]
        ),
        Reply.sse([chunk({"tool_calls": [{"index": 0, "id": "c", "function": {"arguments": "{}"}}]}), (None, "[DONE]")]),
    ],
)
def test_it_reports_malformed_responses(server, reply):
    server.replies.append(reply)
    with pytest.raises(ProviderError) as caught:
        provider_for(server).complete(request())
    assert caught.value.code == "malformed_response"


def test_it_classifies_an_error_envelope_inside_the_stream(server):
    server.replies.append(Reply.sse([(None, {"error": {"message": "overloaded", "type": "server_error"}})]))
    with pytest.raises(ProviderError) as caught:
        provider_for(server).complete(request())
    assert (caught.value.code, caught.value.retryable) == ("unavailable", True)


def test_it_reports_a_refused_connection_as_unavailable():
    provider = create_provider("custom", api_key=None, base_url=REFUSING_URL + "/v1", deployment_config={}, allow_private_urls=True)
    assert_refused_connection_is_retryable_unavailable(provider, request())


def test_it_reports_a_call_slower_than_the_step_timeout_as_retryable_timeout(server):
    assert_slow_answer_is_retryable_timeout(server, provider_for(server), request(step_timeout_seconds=0.1), tool_call_stream(), delay=0.5)

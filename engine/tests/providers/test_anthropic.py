from __future__ import annotations

import json
from typing import Any

import pytest

from engine.providers import create_provider
from engine.tests.providers.builders import READ_FILE, model_request
from engine.tests.providers.fake_server import Reply
from engine.types import Message, ProviderError, ToolCall

API_KEY = "sk-ant-test-secret-987654"


def provider_for(server):
    return create_provider(
        "anthropic", api_key=API_KEY, base_url=server.url, deployment_config={}, http_timeout=30, allow_private_urls=True
    )


def request(**overrides):
    messages = [
        Message("system", "ignored"),
        Message("system", "be brief"),
        Message("user", "hi"),
        Message("assistant", "let me look", tool_calls=[ToolCall("toolu_0", "read_file", '{"path": "a"}')]),
        Message("tool", "no such file", tool_call_id="toolu_0", is_error=True),
        Message("user", "keep going"),
    ]
    return model_request({"model": "claude-test", "messages": messages, "tools": [READ_FILE]}, overrides)


def message_start():
    return (
        "message_start",
        {
            "type": "message_start",
            "message": {
                "id": "msg_1",
                "type": "message",
                "role": "assistant",
                "model": "claude-test-2025",
                "content": [],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": {"input_tokens": 21, "output_tokens": 1},
            },
        },
    )


def message_end(stop_reason, output_tokens=9):
    return [
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop_reason, "stop_sequence": None},
                "usage": {"output_tokens": output_tokens},
            },
        ),
        ("message_stop", {"type": "message_stop"}),
    ]


def tool_use_stream():
    return Reply.sse(
        [
            message_start(),
            ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
            ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Reading"}}),
            ("content_block_stop", {"type": "content_block_stop", "index": 0}),
            (
                "content_block_start",
                {
                    "type": "content_block_start",
                    "index": 1,
                    "content_block": {"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {}},
                },
            ),
            (
                "content_block_delta",
                {"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": '{"path": '}},
            ),
            (
                "content_block_delta",
                {"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": '"b.txt"}'}},
            ),
            ("content_block_stop", {"type": "content_block_stop", "index": 1}),
            *message_end("tool_use"),
        ]
    )


def test_it_streams_text_and_tool_use(server):
    server.replies.append(tool_use_stream())
    deltas: list[dict[str, Any]] = []
    response = provider_for(server).complete(request(on_delta=deltas.append))
    assert response.output_text == "Reading"
    assert [(c.id, c.name, json.loads(c.arguments)) for c in response.tool_calls] == [("toolu_1", "read_file", {"path": "b.txt"})]
    assert response.finish_reason == "tool_calls" and response.provider_model_id == "claude-test-2025"
    assert (response.usage.input_tokens, response.usage.output_tokens, response.usage.total_tokens) == (21, 9, 30)
    assert deltas == [
        {"provider_key": "anthropic", "provider_model_id": "claude-test-2025", "stream_kind": "text", "text_delta": "Reading"}
    ]


def test_it_sends_the_messages_wire_shape(server):
    server.replies.append(tool_use_stream())
    provider_for(server).complete(request())
    sent = server.requests[0]
    assert sent.path == "/v1/messages"
    # The installed SDK (2.x) authenticates with a bearer header and sets its own API version.
    assert API_KEY in (sent.headers.get("x-api-key"), sent.headers.get("authorization", "").removeprefix("Bearer "))
    assert sent.headers["anthropic-version"]
    body = sent.body
    assert body["max_tokens"] == 4096 and body["stream"] is True and body["system"] == "be brief"
    assert body["tools"] == [
        {"name": "read_file", "description": "Read a file", "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}}}
    ]
    assert [m["role"] for m in body["messages"]] == ["user", "assistant", "user"]
    assert body["messages"][1]["content"] == [
        {"type": "text", "text": "let me look"},
        {"type": "tool_use", "id": "toolu_0", "name": "read_file", "input": {"path": "a"}},
    ]
    assert body["messages"][2]["content"] == [
        {"type": "tool_result", "tool_use_id": "toolu_0", "content": "no such file", "is_error": True},
        {"type": "text", "text": "keep going"},
    ]


def test_it_maps_end_turn_to_stop(server):
    server.replies.append(
        Reply.sse(
            [
                message_start(),
                ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
                ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "done"}}),
                *message_end("end_turn"),
            ]
        )
    )
    response = provider_for(server).complete(request(tools=[]))
    assert (response.output_text, response.finish_reason, response.tool_calls) == ("done", "stop", [])
    assert "tools" not in server.requests[0].body


def test_it_classifies_429_as_retryable_rate_limit_with_retry_after(server):
    server.replies.append(
        Reply.json(429, {"type": "error", "error": {"type": "rate_limit_error", "message": "slow"}}, {"retry-after": "2"})
    )
    with pytest.raises(ProviderError) as caught:
        provider_for(server).complete(request())
    assert (caught.value.code, caught.value.retryable, caught.value.retry_after) == ("rate_limit", True, 2.0)
    assert len(server.requests) == 1


@pytest.mark.parametrize(
    ("status", "code", "retryable"),
    [(529, "rate_limit", True), (503, "unavailable", True), (500, "unknown", True), (400, "invalid_request", False)],
)
def test_it_classifies_http_errors(server, status, code, retryable):
    server.replies.append(Reply.json(status, {"type": "error", "error": {"type": "api_error", "message": "x"}}))
    with pytest.raises(ProviderError) as caught:
        provider_for(server).complete(request())
    assert (caught.value.code, caught.value.retryable) == (code, retryable)


def test_it_never_puts_the_api_key_in_an_auth_error(server):
    server.replies.append(
        Reply.json(401, {"type": "error", "error": {"type": "authentication_error", "message": f"invalid x-api-key {API_KEY}"}})
    )
    with pytest.raises(ProviderError) as caught:
        provider_for(server).complete(request())
    assert caught.value.code == "auth" and API_KEY not in str(caught.value)


def test_it_classifies_an_overloaded_error_event_in_the_stream_as_rate_limit(server):
    server.replies.append(
        Reply.sse([message_start(), ("error", {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})])
    )
    with pytest.raises(ProviderError) as caught:
        provider_for(server).complete(request())
    assert (caught.value.code, caught.value.retryable) == ("rate_limit", True)


@pytest.mark.parametrize(
    "reply",
    [
        Reply.json(200, {"id": "msg", "content": []}),
        Reply.sse(
            [
                message_start(),
                (
                    "content_block_start",
                    {
                        "type": "content_block_start",
                        "index": 0,
                        "content_block": {"type": "tool_use", "id": "t", "name": "read_file", "input": {}},
                    },
                ),
                (
                    "content_block_delta",
                    {"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": "{oops"}},
                ),
                *message_end("tool_use"),
            ]
        ),
        Reply.sse([("message_start", "{not json")]),
    ],
)
def test_it_reports_malformed_responses(server, reply):
    server.replies.append(reply)
    with pytest.raises(ProviderError) as caught:
        provider_for(server).complete(request())
    assert caught.value.code == "malformed_response"

"""xAI, OpenRouter, Mistral and custom servers through the OpenAI chat-completions adapter, and
429 back-off for every provider, against loopback servers speaking each vendor's variant."""

from __future__ import annotations

import random
from typing import Any

import pytest

from engine.providers import create_provider
from engine.providers.retry import JITTER, MAX_ATTEMPTS, RETRY_AFTER_PADDING_SECONDS, call_with_retries
from engine.tests.providers.builders import READ_FILE, model_request
from engine.tests.providers.fake_server import Reply
from engine.types import Message, ModelRequest, ProviderError

API_KEY = "sk-test-compatible-key-987654"
COMPATIBLE = ("xai", "openrouter", "mistral", "custom")


def provider_for(key: str, server):
    return create_provider(
        key, api_key=API_KEY, base_url=server.url + "/v1", deployment_config={}, http_timeout=30, allow_private_urls=True
    )


def request(**overrides: Any) -> ModelRequest:
    return model_request(
        {"model": "some-model", "messages": [Message("system", "be brief"), Message("user", "hi")], "tools": [READ_FILE]}, overrides
    )


def chunk(delta: dict | None = None, finish: str | None = None, usage: dict | None = None, **extra: Any) -> tuple[None, dict]:
    body: dict[str, Any] = {
        "id": "gen-1",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "vendor/model-1",
        "choices": [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish}],
        **extra,
    }
    if usage:
        body["usage"] = usage
    return (None, body)


USAGE = {"prompt_tokens": 21, "completion_tokens": 9, "total_tokens": 30}


def streamed_tool_call() -> Reply:
    """The OpenAI shape: fragments with an index, usage in a final choice-less chunk."""
    return Reply.sse(
        [
            chunk(
                {"role": "assistant", "tool_calls": [{"index": 0, "id": "call_1", "type": "function", "function": {"name": "read_file"}}]}
            ),
            chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"path": '}}]}),
            chunk({"tool_calls": [{"index": 0, "function": {"arguments": '"a.txt"}'}}]}),
            chunk({}, finish="tool_calls"),
            chunk(None, usage=USAGE),
            (None, "[DONE]"),
        ]
    )


@pytest.mark.parametrize("key", ["xai", "openrouter", "custom"])
def test_it_streams_tool_calls_and_usage(server, key):
    server.replies.append(streamed_tool_call())
    response = provider_for(key, server).complete(request())
    assert response.provider_key == key and response.provider_model_id == "vendor/model-1"
    assert [(c.id, c.name, c.arguments) for c in response.tool_calls] == [("call_1", "read_file", '{"path": "a.txt"}')]
    assert (response.usage.input_tokens, response.usage.output_tokens, response.usage.total_tokens) == (21, 9, 30)
    sent = server.requests[0]
    assert sent.path == "/v1/chat/completions" and sent.headers["authorization"] == f"Bearer {API_KEY}"
    assert sent.body["stream"] is True and sent.body["stream_options"] == {"include_usage": True}


def test_mistral_gets_no_stream_options_and_whole_calls_without_index_are_kept_apart(server):
    # Mistral streams each tool call whole, without `index`, and its usage rides on the last chunk.
    calls = [
        {"id": "abcDEF123", "function": {"name": "read_file", "arguments": '{"path": "a"}'}},
        {"id": "ghiJKL456", "function": {"name": "read_file", "arguments": '{"path": "b"}'}},
    ]
    server.replies.append(
        Reply.sse([chunk({"role": "assistant", "tool_calls": calls}, finish="tool_calls", usage=USAGE), (None, "[DONE]")])
    )
    response = provider_for("mistral", server).complete(request())
    assert [(c.id, c.arguments) for c in response.tool_calls] == [("abcDEF123", '{"path": "a"}'), ("ghiJKL456", '{"path": "b"}')]
    assert response.usage.total_tokens == 30 and response.finish_reason == "tool_calls"
    assert "stream_options" not in server.requests[0].body


def test_openrouter_names_the_app_and_skips_its_keep_alive_comments(server):
    body = b": OPENROUTER PROCESSING\n\n" + streamed_tool_call().body
    server.replies.append(Reply(200, body, {"Content-Type": "text/event-stream"}))
    response = provider_for("openrouter", server).complete(request())
    assert response.tool_calls[0].name == "read_file"
    assert server.requests[0].headers["x-title"] == "AgentClash"


def test_an_openrouter_error_inside_the_stream_uses_its_http_code(server):
    server.replies.append(
        Reply.sse(
            [
                chunk({"content": "par"}),
                chunk({"content": ""}, finish="error", error={"code": 502, "message": "Provider returned error"}),
            ]
        )
    )
    with pytest.raises(ProviderError) as caught:
        provider_for("openrouter", server).complete(request())
    assert (caught.value.code, caught.value.retryable) == ("unavailable", True)


def test_a_custom_server_without_a_key_still_streams_text(server):
    server.replies.append(Reply.sse([chunk({"content": "hello"}), chunk({}, finish="stop"), (None, "[DONE]")]))
    provider = create_provider("custom", api_key=None, base_url=server.url + "/v1", deployment_config={}, allow_private_urls=True)
    response = provider.complete(request(tools=[]))
    assert response.output_text == "hello" and response.finish_reason == "stop"
    assert "tools" not in server.requests[0].body


@pytest.mark.parametrize("key", COMPATIBLE)
@pytest.mark.parametrize(
    ("status", "code", "retryable"),
    [
        (400, "invalid_request", False),
        (401, "auth", False),
        (422, "invalid_request", False),
        (500, "unknown", True),
        (503, "unavailable", True),
    ],
)
def test_it_classifies_http_errors(server, key, status, code, retryable):
    server.replies.append(Reply.json(status, {"error": {"message": f"failure with {API_KEY}", "type": "x"}}))
    with pytest.raises(ProviderError) as caught:
        provider_for(key, server).complete(request())
    assert (caught.value.code, caught.value.retryable) == (code, retryable)
    assert API_KEY not in caught.value.message


def _rate_limited(key: str) -> Reply:
    if key == "anthropic":
        return Reply.json(429, {"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}}, {"retry-after": "2"})
    if key == "gemini":
        return Reply.json(429, {"error": {"code": 429, "message": "slow down", "status": "RESOURCE_EXHAUSTED"}}, {"Retry-After": "2"})
    return Reply.json(429, {"error": {"message": "slow down", "type": "rate_limit"}}, {"Retry-After": "2"})


def _success(key: str) -> Reply:
    if key == "anthropic":
        return Reply.sse(
            [
                (
                    "message_start",
                    {"type": "message_start", "message": {"id": "m", "model": "claude", "usage": {"input_tokens": 3, "output_tokens": 0}}},
                ),
                ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
                ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "ok"}}),
                ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 1}}),
                ("message_stop", {"type": "message_stop"}),
            ]
        )
    if key == "gemini":
        return Reply.sse([(None, {"candidates": [{"content": {"role": "model", "parts": [{"text": "ok"}]}, "finishReason": "STOP"}]})])
    return Reply.sse([chunk({"content": "ok"}), chunk({}, finish="stop"), (None, "[DONE]")])


@pytest.mark.parametrize("key", ["openai", "anthropic", "gemini", *COMPATIBLE])
def test_every_provider_backs_off_on_429_with_retry_after_then_succeeds(server, key):
    server.replies.extend([_rate_limited(key), _success(key)])
    base_url = server.url if key in ("anthropic", "gemini") else server.url + "/v1"
    provider = create_provider(key, api_key=API_KEY, base_url=base_url, deployment_config={}, http_timeout=30, allow_private_urls=True)
    slept: list[float] = []
    retries: list[tuple[str, float | None]] = []
    response = call_with_retries(
        lambda: provider.complete(request(tools=[])),
        sleep=slept.append,
        on_retry=lambda error, attempt, delay: retries.append((error.code, error.retry_after)),
        rng=random.Random(1),
    )
    assert response.output_text == "ok" and len(server.requests) == 2
    assert retries == [("rate_limit", 2.0)]
    wait = 2 + RETRY_AFTER_PADDING_SECONDS  # Retry-After plus padding, then jitter
    assert wait * (1 - JITTER) <= slept[0] <= wait * (1 + JITTER)


@pytest.mark.parametrize("key", ["openai", "anthropic", "gemini", *COMPATIBLE])
def test_every_provider_gives_up_after_the_last_rate_limited_attempt(server, key):
    server.replies.extend([_rate_limited(key) for _ in range(MAX_ATTEMPTS)])
    base_url = server.url if key in ("anthropic", "gemini") else server.url + "/v1"
    provider = create_provider(key, api_key=API_KEY, base_url=base_url, deployment_config={}, http_timeout=30, allow_private_urls=True)
    slept: list[float] = []
    with pytest.raises(ProviderError) as caught:
        call_with_retries(lambda: provider.complete(request(tools=[])), sleep=slept.append, rng=random.Random(1))
    assert caught.value.code == "rate_limit" and len(server.requests) == MAX_ATTEMPTS and len(slept) == MAX_ATTEMPTS - 1

"""The Gemini adapter (google-genai SDK) against a loopback server speaking streamGenerateContent."""

from __future__ import annotations

import random
from typing import Any

import pytest

from engine.providers import create_provider
from engine.providers.gemini import wire_messages
from engine.providers.retry import JITTER, RETRY_AFTER_PADDING_SECONDS, call_with_retries
from engine.tests.providers.builders import (
    REFUSING_URL,
    assert_refused_connection_is_retryable_unavailable,
    assert_slow_answer_is_retryable_timeout,
    model_request,
)
from engine.tests.providers.fake_server import Reply
from engine.types import Message, ModelRequest, ProviderError

API_KEY = "AIzaSy-test-secret-key-123456"


def provider_for(server):
    return create_provider(
        "gemini",
        api_key=API_KEY,
        base_url=server.url,
        deployment_config={"temperature": 0.2},
        http_timeout=30,
        allow_private_urls=True,
    )


def request(**overrides: Any) -> ModelRequest:
    return model_request({"model": "gemini-test", "messages": [Message("system", "be brief"), Message("user", "read a")]}, overrides)


def chunk(parts: list[dict], finish: str | None = None, usage: dict | None = None) -> tuple[None, dict]:
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "index": 0}
    if finish:
        candidate["finishReason"] = finish
    body: dict[str, Any] = {"candidates": [candidate], "modelVersion": "gemini-test-001", "responseId": "resp-1"}
    if usage:
        body["usageMetadata"] = usage
    return (None, body)


USAGE = {"promptTokenCount": 12, "candidatesTokenCount": 5, "thoughtsTokenCount": 3, "totalTokenCount": 20}


def tool_call_stream() -> Reply:
    return Reply.sse(
        [
            chunk([{"text": "Let me "}]),
            chunk([{"text": "thinking…", "thought": True}, {"text": "look."}]),
            chunk(
                [
                    {"functionCall": {"name": "read_file", "args": {"path": "a.txt"}}, "thoughtSignature": "c2lnLTE="},
                    {"functionCall": {"id": "fc-2", "name": "submit", "args": {"answer": 42}}},
                ],
                finish="STOP",
                usage=USAGE,
            ),
        ]
    )


def test_it_streams_text_function_calls_and_usage(server):
    server.replies.append(tool_call_stream())
    deltas: list[dict] = []
    response = provider_for(server).complete(request(on_delta=deltas.append))
    assert response.provider_key == "gemini" and response.provider_model_id == "gemini-test-001"
    assert response.output_text == "Let me look."  # the thought part is not output
    assert response.finish_reason == "tool_calls"
    assert [(c.id, c.name, c.arguments) for c in response.tool_calls] == [
        ("gemini_call_resp-1_0", "read_file", '{"path": "a.txt"}'),
        ("fc-2", "submit", '{"answer": 42}'),
    ]
    assert (response.usage.input_tokens, response.usage.output_tokens, response.usage.total_tokens) == (12, 8, 20)
    assert deltas == [{"provider_key": "gemini", "provider_model_id": "gemini-test-001", "stream_kind": "text", "text_delta": "Let me "}]


def test_it_sends_tools_as_function_declarations_with_the_key_in_a_header(server):
    server.replies.append(tool_call_stream())
    provider_for(server).complete(request())
    sent = server.requests[0]
    assert sent.path == "/v1beta/models/gemini-test:streamGenerateContent?alt=sse"
    assert sent.headers["x-goog-api-key"] == API_KEY and API_KEY not in sent.path
    declarations = sent.body["tools"][0]["functionDeclarations"]
    assert [d["name"] for d in declarations] == ["read_file", "submit"]
    schema = declarations[0].get("parametersJsonSchema") or declarations[0].get("parameters_json_schema")
    assert schema == {"type": "object", "properties": {"path": {"type": "string"}}}
    assert sent.body["systemInstruction"]["parts"] == [{"text": "be brief"}]
    assert sent.body["contents"] == [{"role": "user", "parts": [{"text": "read a"}]}]
    assert sent.body["generationConfig"]["temperature"] == 0.2


def test_it_sends_tool_results_back_as_function_responses_with_the_thought_signature(server):
    server.replies.append(tool_call_stream())
    provider = provider_for(server)
    first = provider.complete(request())
    server.replies.append(Reply.sse([chunk([{"text": "done"}], finish="STOP", usage=USAGE)]))
    follow_up = [
        Message("user", "read a"),
        Message("assistant", "Let me look.", tool_calls=first.tool_calls),
        Message("tool", "file body", tool_call_id=first.tool_calls[0].id),
        Message("tool", "no such tool", tool_call_id="fc-2", is_error=True),
    ]
    assert provider.complete(request(messages=follow_up)).output_text == "done"
    contents = server.requests[1].body["contents"]
    assert [c["role"] for c in contents] == ["user", "model", "user"]
    model_parts = contents[1]["parts"]
    assert model_parts[0] == {"text": "Let me look."}
    assert model_parts[1]["functionCall"] == {"name": "read_file", "args": {"path": "a.txt"}}  # made-up id not sent
    assert model_parts[1]["thoughtSignature"] == "c2lnLTE="
    assert model_parts[2]["functionCall"] == {"id": "fc-2", "name": "submit", "args": {"answer": 42}}
    responses = [p["functionResponse"] for p in contents[2]["parts"]]
    assert responses == [
        {"name": "read_file", "response": {"output": "file body"}},
        {"id": "fc-2", "name": "submit", "response": {"error": "no such tool"}},
    ]


def test_it_maps_max_tokens_and_safety_finish_reasons(server):
    server.replies.append(Reply.sse([chunk([{"text": "trunc"}], finish="MAX_TOKENS")]))
    assert provider_for(server).complete(request()).finish_reason == "max_tokens"
    server.replies.append(Reply.sse([(None, {"promptFeedback": {"blockReason": "SAFETY"}, "modelVersion": "g"})]))
    blocked = provider_for(server).complete(request())
    assert blocked.finish_reason == "content_filter" and blocked.output_text == "" and blocked.raw_response["block_reason"] == "SAFETY"


def _error(status: int, message: str, state: str, details: list | None = None, headers: dict | None = None) -> Reply:
    return Reply.json(status, {"error": {"code": status, "message": message, "status": state, "details": details or []}}, headers)


@pytest.mark.parametrize(
    ("reply", "code", "retryable"),
    [
        (_error(400, "Invalid JSON payload", "INVALID_ARGUMENT"), "invalid_request", False),
        (
            _error(400, "API key not valid. Please pass a valid API key.", "INVALID_ARGUMENT", [{"reason": "API_KEY_INVALID"}]),
            "auth",
            False,
        ),
        (_error(401, "Request had invalid authentication credentials.", "UNAUTHENTICATED"), "auth", False),
        (_error(403, "Permission denied", "PERMISSION_DENIED"), "auth", False),
        (_error(500, "Internal error", "INTERNAL"), "unknown", True),
        (_error(503, "The model is overloaded", "UNAVAILABLE"), "unavailable", True),
    ],
)
def test_it_classifies_http_errors(server, reply, code, retryable):
    server.replies.append(reply)
    with pytest.raises(ProviderError) as caught:
        provider_for(server).complete(request())
    assert (caught.value.code, caught.value.retryable) == (code, retryable)
    assert API_KEY not in caught.value.message


def test_a_429_carries_retry_after_from_the_header_or_the_retry_info(server):
    server.replies.append(_error(429, "Resource exhausted", "RESOURCE_EXHAUSTED", headers={"Retry-After": "3"}))
    with pytest.raises(ProviderError) as caught:
        provider_for(server).complete(request())
    assert (caught.value.code, caught.value.retryable, caught.value.retry_after) == ("rate_limit", True, 3.0)
    retry_info = [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "17s"}]
    server.replies.append(_error(429, "Quota exceeded", "RESOURCE_EXHAUSTED", retry_info))
    with pytest.raises(ProviderError) as caught:
        provider_for(server).complete(request())
    assert (caught.value.code, caught.value.retry_after) == ("rate_limit", 17.0)


def test_the_loop_retry_backs_off_on_429_then_succeeds(server):
    server.replies.append(_error(429, "Resource exhausted", "RESOURCE_EXHAUSTED", headers={"Retry-After": "2"}))
    server.replies.append(tool_call_stream())
    provider = provider_for(server)
    slept: list[float] = []
    response = call_with_retries(lambda: provider.complete(request()), sleep=slept.append, rng=random.Random(0))
    assert response.tool_calls and len(server.requests) == 2
    wait = 2 + RETRY_AFTER_PADDING_SECONDS
    assert len(slept) == 1 and wait * (1 - JITTER) <= slept[0] <= wait * (1 + JITTER)


def test_an_error_inside_the_stream_is_classified(server):
    server.replies.append(
        Reply.sse([chunk([{"text": "par"}]), (None, {"error": {"code": 503, "message": "backend went away", "status": "UNAVAILABLE"}})])
    )
    with pytest.raises(ProviderError) as caught:
        provider_for(server).complete(request())
    assert (caught.value.code, caught.value.retryable) == ("unavailable", True)


def test_an_empty_stream_is_malformed(server):
    server.replies.append(Reply(200, b"", {"Content-Type": "text/event-stream"}))
    with pytest.raises(ProviderError) as caught:
        provider_for(server).complete(request())
    assert caught.value.code == "malformed_response"


def test_a_refused_connection_is_retryable_unavailable():
    provider = create_provider("gemini", api_key=API_KEY, base_url=REFUSING_URL, deployment_config={}, allow_private_urls=True)
    assert_refused_connection_is_retryable_unavailable(provider, request())


def test_a_slow_answer_is_a_retryable_timeout(server):
    assert_slow_answer_is_retryable_timeout(server, provider_for(server), request(step_timeout_seconds=1), tool_call_stream(), delay=1.5)


def test_a_loopback_base_url_is_refused_unless_the_operator_allows_private_urls(server):
    provider = create_provider("gemini", api_key=API_KEY, base_url=server.url, deployment_config={})
    with pytest.raises(ProviderError) as caught:
        provider.complete(request())
    assert caught.value.code == "invalid_request" and "loopback" in caught.value.message
    assert server.requests == []


def test_an_orphan_tool_result_and_a_silent_assistant_turn_are_still_valid_parts():
    system, contents = wire_messages([Message("tool", "x", tool_call_id="orphan"), Message("assistant", "", tool_calls=[])])
    assert system == ""
    assert contents[0].parts[0].function_response.name == "tool"
    assert contents[1].parts[0].text == "(no output)"

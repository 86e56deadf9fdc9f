"""What the provider adapters' tests share: a model request and the transport-failure checks.

Each adapter's test module keeps its own ``request(**overrides)`` (its model name and turn) built
on ``model_request``; the checks below are the same for every adapter speaking HTTP.
"""

from __future__ import annotations

from typing import Any

import pytest

from engine.tests.providers.fake_server import FakeServer, Reply
from engine.types import Message, ModelRequest, Provider, ProviderError, ToolCall, ToolDefinition

READ_FILE = ToolDefinition("read_file", "Read a file", {"type": "object", "properties": {"path": {"type": "string"}}})
SUBMIT = ToolDefinition("submit", "Submit", {})
REFUSING_URL = "http://127.0.0.1:9"  # the discard port: nothing listens, the connection is refused


def model_request(fields: dict[str, Any], overrides: dict[str, Any]) -> ModelRequest:
    """A ``ModelRequest`` of a test module's ``fields`` (its model and messages) and a test's ``overrides``;
    ``tools`` defaults to ``read_file`` and ``submit``."""
    return ModelRequest(**{"tools": [READ_FILE, SUBMIT], "step_timeout_seconds": 5, **fields, **overrides})


def tool_turn(user: str = "hi", assistant: str = "") -> list[Message]:
    """A system prompt, the user's message, an assistant ``read_file`` call and its failed result."""
    return [
        Message("system", "be brief"),
        Message("user", user),
        Message("assistant", assistant, tool_calls=[ToolCall("call_0", "read_file", '{"path": "a"}')]),
        Message("tool", "file body", tool_call_id="call_0", is_error=True),
    ]


def assert_refused_connection_is_retryable_unavailable(provider: Provider, request: ModelRequest) -> None:
    with pytest.raises(ProviderError) as caught:
        provider.complete(request)
    assert (caught.value.code, caught.value.retryable) == ("unavailable", True)


def assert_slow_answer_is_retryable_timeout(
    server: FakeServer, provider: Provider, request: ModelRequest, slow: Reply, *, delay: float
) -> None:
    """The server answers ``delay`` seconds late, after the request's step timeout."""
    slow.delay = delay
    server.replies.append(slow)
    with pytest.raises(ProviderError) as caught:
        provider.complete(request)
    assert (caught.value.code, caught.value.retryable) == ("timeout", True)

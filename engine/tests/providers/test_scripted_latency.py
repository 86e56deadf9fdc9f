"""The scripted provider's ``latency_ms``: a call that takes as long as a real model's."""

from __future__ import annotations

import time
from typing import Any

import pytest

from engine.providers import create_provider
from engine.types import JSON, Message, ModelRequest, ProviderError, ToolDefinition

SCRIPT: JSON = {"default": [{"submit": "done"}]}


def request(step_timeout: float = 30.0) -> ModelRequest:
    return ModelRequest(
        model="m", messages=[Message("user", "go")], tools=[ToolDefinition("submit", "Submit", {})], step_timeout_seconds=step_timeout
    )


def test_a_call_takes_the_configured_latency_and_records_when_it_ran():
    provider = create_provider("scripted", api_key=None, base_url=None, deployment_config={"script": SCRIPT, "latency_ms": 150})
    before = time.time()
    response = provider.complete(request())
    after = time.time()
    raw: Any = response.raw_response
    assert response.tool_calls[0].name == "submit"
    assert before <= raw["called_at"] and raw["answered_at"] <= after and raw["answered_at"] - raw["called_at"] >= 0.15


def test_a_latency_longer_than_the_step_timeout_is_a_retryable_timeout():
    provider = create_provider("scripted", api_key=None, base_url=None, deployment_config={"script": SCRIPT, "latency_ms": 5000})
    started = time.monotonic()
    with pytest.raises(ProviderError) as caught:
        provider.complete(request(step_timeout=0.1))
    assert (caught.value.code, caught.value.retryable) == ("timeout", True) and time.monotonic() - started < 2


def test_without_latency_nothing_is_added_to_the_response():
    response = create_provider("scripted", api_key=None, base_url=None, deployment_config={"script": SCRIPT}).complete(request())
    raw = response.raw_response
    assert isinstance(raw, dict) and "called_at" not in raw

from __future__ import annotations

import random

import pytest

from engine.providers import BrokenProvider, create_provider
from engine.providers.errors import classify_status, parse_retry_after, redact
from engine.providers.retry import call_with_retries, retry_delay
from engine.types import Message, ModelRequest, ProviderError


def test_it_builds_openai_compatible_providers_for_every_compatible_key():
    for key in ("openai", "xai", "openrouter", "mistral"):
        provider = create_provider(key, api_key="k", base_url=None, deployment_config={})
        assert type(provider).__name__ == "OpenAIProvider" and provider.provider_key == key


@pytest.mark.parametrize(
    ("key", "base_url", "code"),
    [("nope", None, "unsupported_provider"), ("custom", None, "invalid_request")],
)
def test_it_returns_a_provider_that_fails_cleanly_when_it_cannot_be_built(key, base_url, code):
    provider = create_provider(key, api_key=None, base_url=base_url, deployment_config={})
    assert isinstance(provider, BrokenProvider)
    with pytest.raises(ProviderError) as caught:
        provider.complete(ModelRequest(model="m", messages=[Message("user", "hi")], tools=[]))
    assert caught.value.code == code and not caught.value.retryable


def test_retry_delay_honours_retry_after_plus_one_second_with_jitter():
    error = ProviderError("rate_limit", "x", retryable=True, retry_after=4)
    delays = [retry_delay(error, 1, random.Random(seed)) for seed in range(50)]
    assert all(5 * 0.8 <= d <= 5 * 1.2 for d in delays) and len(set(delays)) > 1


def test_retry_delay_waits_at_least_two_seconds_for_rate_limits_without_retry_after():
    assert retry_delay(ProviderError("rate_limit", "x", retryable=True), 1, random.Random(1)) >= 2 * 0.8


def test_retry_delay_doubles_from_250_ms():
    error = ProviderError("timeout", "x", retryable=True)
    assert 0.2 <= retry_delay(error, 1) <= 0.3
    assert 0.4 <= retry_delay(error, 2) <= 0.6


def test_call_with_retries_stops_when_the_caller_vetoes_waiting():
    sleeps: list[float] = []
    calls = []

    def failing():
        calls.append(1)
        raise ProviderError("unavailable", "x", retryable=True)

    with pytest.raises(ProviderError):
        call_with_retries(failing, sleep=sleeps.append, may_wait=lambda delay: False)
    assert (len(calls), sleeps) == (1, [])


def test_it_reads_retry_after_headers():
    assert parse_retry_after({"retry-after": "3"}) == 3.0
    assert parse_retry_after({"retry-after-ms": "1500"}) == 1.5
    assert parse_retry_after({"retry-after": "soon"}) is None


def test_it_redacts_keys_from_messages():
    assert "sk-live" not in redact("bad key sk-live-abcdef123")
    assert "hunter22" not in redact("echo hunter22", ("hunter22",))
    assert classify_status(401, "key hunter22", secrets=("hunter22",)).message == "HTTP 401: key [redacted]"

"""In-call provider retries are recorded as events, honour Retry-After and stop at the deadline."""

from __future__ import annotations

import json
import random
import time

from engine.events import PROVIDER_CALL_RETRYING
from engine.modes import run_case
from engine.providers import create_provider
from engine.providers.retry import retry_delay
from engine.tests.loop.fakes import FakeClock, FakeToolset, Recorder, StubProvider, make_request, tool_response
from engine.tests.loop.test_multi_turn_simulator import HUMAN, LLM, OPEN, PUSHBACK, execute, request_for, said, simulator, submit
from engine.tests.providers.fake_server import FakeServer, Reply
from engine.types import ProviderError


def run(provider, *, request=None, clock=None):
    recorder = Recorder()
    kwargs = {"clock": clock, "sleep": clock.sleep} if clock else {}
    outcome = run_case(
        request or make_request(), provider=provider, toolset=FakeToolset(), event_sink=recorder, cancel_check=lambda: False, **kwargs
    )
    return outcome, recorder


def test_a_retry_is_recorded_with_the_code_the_wait_and_retry_after():
    clock = FakeClock()
    provider = StubProvider(
        ProviderError("rate_limit", "HTTP 429: slow down", retryable=True, retry_after=3), tool_response(("submit", {"answer": "a"}))
    )
    outcome, recorder = run(provider, clock=clock)
    assert outcome.stop_reason == "completed"
    [event] = recorder.of_type(PROVIDER_CALL_RETRYING)
    payload = event.payload
    assert (payload["code"], payload["attempt"], payload["retry_after_ms"], payload["provider_key"]) == ("rate_limit", 1, 3000, "stub")
    assert payload["delay_ms"] == int(clock.sleeps[0] * 1000) and payload["step_index"] == 1
    assert payload["message"] == "HTTP 429: slow down"


def test_no_retry_event_when_the_wait_would_pass_the_deadline():
    clock = FakeClock()
    provider = StubProvider(
        ProviderError("rate_limit", "slow", retryable=True, retry_after=500), tool_response(("submit", {"answer": "a"}))
    )
    outcome, recorder = run(provider, clock=clock, request=make_request(runtime_profile={"run_timeout_seconds": 60}))
    assert outcome.stop_reason == "provider_error" and clock.sleeps == []
    assert recorder.of_type(PROVIDER_CALL_RETRYING) == []


def test_jitter_never_waits_less_than_retry_after():
    error = ProviderError("rate_limit", "x", retryable=True, retry_after=10)
    delays = [retry_delay(error, 1, random.Random(seed)) for seed in range(200)]
    assert min(delays) >= 10 and max(delays) <= 11 * 1.2


def _openai_stream(text: str) -> Reply:
    chunk = {"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "gpt-test"}
    tool_call = {"index": 0, "id": "call_1", "type": "function", "function": {"name": "submit", "arguments": json.dumps({"answer": text})}}
    return Reply.sse(
        [
            (None, {**chunk, "choices": [{"index": 0, "delta": {"role": "assistant", "tool_calls": [tool_call]}, "finish_reason": None}]}),
            (None, {**chunk, "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}),
            (None, "[DONE]"),
        ]
    )


def test_a_real_429_with_retry_after_backs_off_and_succeeds_within_the_deadline():
    with FakeServer() as server:
        server.replies.append(Reply.json(429, {"error": {"message": "Rate limit reached"}}, {"Retry-After": "0.2"}))
        server.replies.append(_openai_stream("done"))
        provider = create_provider(
            "custom", api_key="sk-test-1234567", base_url=server.url + "/v1", deployment_config={}, http_timeout=5, allow_private_urls=True
        )
        started = time.monotonic()
        outcome, recorder = run(provider, request=make_request(runtime_profile={"run_timeout_seconds": 20}))
        elapsed = time.monotonic() - started
    assert (outcome.stop_reason, outcome.final_output) == ("completed", "done")
    [event] = recorder.of_type(PROVIDER_CALL_RETRYING)
    assert event.payload["code"] == "rate_limit" and event.payload["retry_after_ms"] == 200
    assert event.payload["delay_ms"] >= 200  # Retry-After (+ 1 s padding, ± jitter), never less
    assert len(server.requests) == 2 and event.payload["delay_ms"] / 1000 <= elapsed < 20


def test_a_user_simulator_retry_is_recorded_too():
    agent = StubProvider(submit("Let me look."), submit("Sorry about that."), submit("Here is the timeline: 3-5 days."))
    sim = StubProvider(ProviderError("rate_limit", "HTTP 429", retryable=True, retry_after=1), said("So when do I get my money?"))
    outcome, recorder = execute(request_for(simulator(OPEN, PUSHBACK, LLM, HUMAN), simulator_model="sim-default"), agent, sim)
    assert outcome.status == "completed" and len(sim.requests) == 2
    [event] = recorder.of_type(PROVIDER_CALL_RETRYING)
    assert (event.payload["code"], event.payload["retry_after_ms"], event.payload["phase_id"]) == ("rate_limit", 1000, "follow")

"""``Retry-After`` as an HTTP date (RFC 9110 §10.2.3), and how the loop's wait uses it."""

from __future__ import annotations

import random
from datetime import UTC, datetime

from engine.events import PROVIDER_CALL_RETRYING
from engine.providers.errors import classify_status, parse_retry_after
from engine.providers.retry import call_with_retries, retry_delay
from engine.tests.loop.fakes import FakeClock, StubProvider, make_request, tool_response
from engine.tests.loop.test_provider_retry_events import run

NOW = datetime(2026, 11, 26, 13, 0, 0, tzinfo=UTC)


def test_an_http_date_is_read_as_the_seconds_until_it():
    assert parse_retry_after({"retry-after": "Thu, 26 Nov 2026 13:00:30 GMT"}, now=NOW) == 30.0


def test_the_other_two_http_date_formats_are_read_too():
    # RFC 850 and asctime(), which RFC 9110 says recipients must accept
    assert parse_retry_after({"retry-after": "Thursday, 26-Nov-26 13:00:45 GMT"}, now=NOW) == 45.0
    assert parse_retry_after({"retry-after": "Thu Nov 26 13:01:00 2026"}, now=NOW) == 60.0


def test_the_date_is_counted_from_the_servers_own_date_header_when_it_sent_one():
    headers = {"retry-after": "Thu, 26 Nov 2026 13:00:20 GMT", "date": "Thu, 26 Nov 2026 13:00:05 GMT"}
    # our clock is 10 minutes off; the server's Date keeps the wait the server meant (15 s)
    assert parse_retry_after(headers, now=NOW.replace(minute=10)) == 15.0


def test_a_date_in_the_past_means_retry_now_and_garbage_means_no_hint():
    assert parse_retry_after({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}, now=NOW) == 0.0
    assert parse_retry_after({"retry-after": "Thu, 99 Nov 2026 25:00:00 GMT"}, now=NOW) is None
    assert parse_retry_after({"retry-after": "later"}, now=NOW) is None
    assert parse_retry_after({"retry-after": "inf"}, now=NOW) is None
    # a garbled Date header falls back to our own clock
    assert parse_retry_after({"retry-after": "Thu, 26 Nov 2026 13:00:10 GMT", "date": "yesterday"}, now=NOW) == 10.0


def test_a_429_with_a_date_carries_the_wait_and_the_delay_never_cuts_it():
    headers = {"retry-after": "Thu, 26 Nov 2026 13:00:08 GMT", "date": "Thu, 26 Nov 2026 13:00:00 GMT"}
    error = classify_status(429, "slow down", headers=headers)
    assert error.code == "rate_limit" and error.retryable and error.retry_after == 8.0
    delays = [retry_delay(error, 1, random.Random(seed)) for seed in range(100)]
    assert min(delays) >= 8.0


def test_a_date_far_ahead_is_never_waited_past_the_deadline():
    far = {"retry-after": "Fri, 27 Nov 2026 13:00:00 GMT", "date": "Thu, 26 Nov 2026 13:00:00 GMT"}
    error = classify_status(429, "slow down", headers=far)
    assert error.retry_after == 86400.0
    clock = FakeClock()
    outcome, recorder = run(
        StubProvider(error, tool_response(("submit", {"answer": "a"}))),
        clock=clock,
        request=make_request(runtime_profile={"run_timeout_seconds": 60}),
    )
    assert outcome.stop_reason == "provider_error" and clock.sleeps == []
    assert recorder.of_type(PROVIDER_CALL_RETRYING) == []


def test_a_near_date_is_waited_out_and_the_call_retried():
    near = {"retry-after": "Thu, 26 Nov 2026 13:00:03 GMT", "date": "Thu, 26 Nov 2026 13:00:00 GMT"}
    calls: list[int] = []
    sleeps: list[float] = []

    def call() -> str:
        calls.append(1)
        if len(calls) == 1:
            raise classify_status(429, "slow down", headers=near)
        return "ok"

    assert call_with_retries(call, sleep=sleeps.append, may_wait=lambda delay: delay < 60) == "ok"
    assert len(calls) == 2 and sleeps[0] >= 3.0


def test_a_real_429_with_an_http_date_backs_off_and_succeeds():
    import time
    from email.utils import formatdate

    from engine.providers import create_provider
    from engine.tests.loop.test_provider_retry_events import _openai_stream
    from engine.tests.providers.fake_server import FakeServer, Reply

    with FakeServer() as server:
        when = formatdate(time.time() + 2, usegmt=True)  # the server's own Date header is "now"
        server.replies.append(Reply.json(429, {"error": {"message": "Rate limit reached"}}, {"Retry-After": when}))
        server.replies.append(_openai_stream("done"))
        provider = create_provider(
            "custom", api_key="sk-test-1234567", base_url=server.url + "/v1", deployment_config={}, http_timeout=30, allow_private_urls=True
        )
        outcome, recorder = run(provider, request=make_request(runtime_profile={"run_timeout_seconds": 30}))
    assert (outcome.stop_reason, outcome.final_output) == ("completed", "done")
    [event] = recorder.of_type(PROVIDER_CALL_RETRYING)
    assert 1000 <= event.payload["retry_after_ms"] <= 3000  # whole seconds on both dates
    assert event.payload["delay_ms"] >= event.payload["retry_after_ms"] and len(server.requests) == 2

"""Provider account limits (runs/throttle/): both backends, the waiting provider, the page."""

from __future__ import annotations

import datetime as dt
import threading
import time
import uuid
from typing import Any

import pytest
from django.db import connection

import runs.throttle
from conftest import require_or_skip
from engine.events import PROVIDER_THROTTLE_WAITING, PROVIDER_THROTTLED
from engine.types import Message, ModelRequest, ModelResponse, ProviderError, Usage
from infrastructure.models import ProviderAccount, ProviderCallLease
from runs.throttle import (
    DatabaseLimiter,
    Decision,
    LimiterUnavailable,
    Limits,
    RedisLimiter,
    ThrottledProvider,
    account_limits,
    cached_account_limits,
    limits_cache_clear,
    throttled,
)

REDIS_URL = "redis://127.0.0.1:6379/13"  # a private database number; keys get a per-test prefix too


def _redis_limiter() -> RedisLimiter:
    import redis

    try:
        available = bool(redis.Redis.from_url(REDIS_URL, socket_timeout=1, socket_connect_timeout=1).ping())
    except (redis.RedisError, OSError):
        available = False
    require_or_skip(available, "Redis at 127.0.0.1:6379")
    return RedisLimiter(REDIS_URL, prefix=f"agentclash-test:{uuid.uuid4().hex[:8]}")


@pytest.fixture(params=["database", "redis"])
def limiter(request):
    if request.param == "redis":
        limiter = _redis_limiter()
        yield limiter
        for key in limiter.client.scan_iter(f"{limiter.prefix}:*"):
            limiter.client.delete(key)
        return
    request.getfixturevalue("db")
    yield DatabaseLimiter()


@pytest.fixture
def account_id(workspace):
    return ProviderAccount.objects.create(workspace=workspace, name="limited", provider_key="scripted").pk


def take(limiter, account_id, limits, lease=30.0) -> Decision:
    return limiter.try_acquire(account_id=account_id, limits=limits, lease_seconds=lease)


# -- the backends --------------------------------------------------------------------------


def test_it_holds_the_concurrency_limit_until_a_call_is_released(limiter, account_id):
    limits = Limits(max_concurrent_calls=2)
    first, second, third = (take(limiter, account_id, limits) for _ in range(3))
    assert first.granted and second.granted and first.token != second.token
    assert (third.granted, third.limit, third.limit_value) == (False, "max_concurrent_calls", 2)
    assert 0 < third.retry_in <= 1
    limiter.release(account_id=account_id, token=first.token, tokens=0)
    assert take(limiter, account_id, limits).granted
    assert not take(limiter, account_id, limits).granted


def test_a_crashed_workers_slot_frees_itself_when_its_lease_expires(limiter, account_id):
    limits = Limits(max_concurrent_calls=1)
    assert take(limiter, account_id, limits, lease=0.3).granted  # never released: the worker died
    assert not take(limiter, account_id, limits).granted
    time.sleep(0.45)
    assert take(limiter, account_id, limits).granted


def test_it_counts_requests_per_minute_including_finished_calls(limiter, account_id):
    limits = Limits(requests_per_minute=2)
    for _ in range(2):
        decision = take(limiter, account_id, limits)
        limiter.release(account_id=account_id, token=decision.token, tokens=5)
    refused = take(limiter, account_id, limits)
    assert (refused.granted, refused.limit, refused.limit_value) == (False, "requests_per_minute", 2)
    assert 55 <= refused.retry_in <= 60  # the oldest call leaves the 60 s window then


def test_it_counts_the_tokens_calls_used_in_the_last_minute(limiter, account_id):
    limits = Limits(tokens_per_minute=100)
    first = take(limiter, account_id, limits)
    limiter.release(account_id=account_id, token=first.token, tokens=60)
    second = take(limiter, account_id, limits)  # 60 < 100: may start
    assert second.granted
    limiter.release(account_id=account_id, token=second.token, tokens=45)
    refused = take(limiter, account_id, limits)
    assert (refused.granted, refused.limit, refused.limit_value) == (False, "tokens_per_minute", 100)
    assert 55 <= refused.retry_in <= 60


def test_one_accounts_limit_does_not_hold_back_another(limiter, account_id, workspace):
    other = ProviderAccount.objects.create(workspace=workspace, name="other", provider_key="scripted").pk
    limits = Limits(max_concurrent_calls=1)
    assert take(limiter, account_id, limits).granted
    assert take(limiter, other, limits).granted
    assert not take(limiter, account_id, limits).granted


def test_the_database_backend_drops_rows_that_left_every_window(db, account_id):
    limiter = DatabaseLimiter()
    decision = take(limiter, account_id, Limits(max_concurrent_calls=5))
    limiter.release(account_id=account_id, token=decision.token, tokens=3)
    ProviderCallLease.objects.update(started_at=ProviderCallLease.objects.get().started_at - dt.timedelta(minutes=2))
    take(limiter, account_id, Limits(max_concurrent_calls=5))
    assert ProviderCallLease.objects.count() == 1  # the old, released row is gone; the new one is held


def test_an_unreachable_redis_is_reported_not_raised_raw():
    limiter = RedisLimiter("redis://127.0.0.1:1/0")  # nothing listens on port 1
    with pytest.raises(LimiterUnavailable):
        limiter.try_acquire(account_id=1, limits=Limits(max_concurrent_calls=1), lease_seconds=1)


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("backend", ["database", "redis"])
def test_threads_racing_for_slots_never_exceed_the_limit(backend, workspace):
    limiter = _redis_limiter() if backend == "redis" else DatabaseLimiter()
    account = ProviderAccount.objects.create(workspace=workspace, name="raced", provider_key="scripted").pk
    limits = Limits(max_concurrent_calls=2)
    lock, in_flight, peak, done = threading.Lock(), [0], [0], [0]

    def worker() -> None:
        try:
            for _ in range(4):
                while not (decision := take(limiter, account, limits)).granted:
                    time.sleep(0.01)
                with lock:
                    in_flight[0] += 1
                    peak[0] = max(peak[0], in_flight[0])
                time.sleep(0.02)
                with lock:
                    in_flight[0] -= 1
                limiter.release(account_id=account, token=decision.token, tokens=1)
                with lock:
                    done[0] += 1
        finally:
            connection.close()

    threads = [threading.Thread(target=worker) for _ in range(5)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert done[0] == 20 and peak[0] == 2


# -- the account's limits ------------------------------------------------------------------


def test_account_limits_reads_the_accounts_current_limits(db, workspace):
    account = ProviderAccount.objects.create(
        workspace=workspace, name="x", provider_key="scripted", max_concurrent_calls=3, tokens_per_minute=900
    )
    assert account_limits(account.pk) == Limits(max_concurrent_calls=3, tokens_per_minute=900)
    assert account.limits == {"max_concurrent_calls": 3, "tokens_per_minute": 900}
    assert not account_limits(None) and not account_limits(10**9)


def test_a_worker_rereads_an_accounts_limits_once_its_cache_expires(db, workspace, monkeypatch):
    limits_cache_clear()
    account = ProviderAccount.objects.create(workspace=workspace, name="x", provider_key="scripted", max_concurrent_calls=1)
    assert cached_account_limits(account.pk).max_concurrent_calls == 1
    ProviderAccount.objects.filter(pk=account.pk).update(max_concurrent_calls=5)
    assert cached_account_limits(account.pk).max_concurrent_calls == 1  # within LIMITS_CACHE_SECONDS
    monkeypatch.setattr(runs.throttle, "_cache", {k: (0.0, v[1]) for k, v in runs.throttle._cache.items()})  # time passed
    assert cached_account_limits(account.pk).max_concurrent_calls == 5
    limits_cache_clear()


def test_only_an_account_with_limits_gets_a_waiting_provider(db, workspace):
    limits_cache_clear()
    free = ProviderAccount.objects.create(workspace=workspace, name="free", provider_key="scripted")
    limited = ProviderAccount.objects.create(workspace=workspace, name="limited", provider_key="scripted", requests_per_minute=10)
    inner = Inner()
    kwargs: dict[str, Any] = {"emit": lambda *a: None, "run_timeout_seconds": 60, "cancel": lambda: False}
    assert throttled(inner, account_id=free.pk, **kwargs) is inner
    wrapped_provider = throttled(inner, account_id=limited.pk, **kwargs)
    assert isinstance(wrapped_provider, ThrottledProvider) and wrapped_provider.limits == Limits(requests_per_minute=10)
    assert wrapped_provider.provider_key == "scripted"
    limits_cache_clear()


# -- the provider that waits ---------------------------------------------------------------


class FakeLimiter:
    """Refuses the first ``refusals`` tries, then grants; records releases."""

    name = "fake"

    def __init__(self, refusals: int = 0, *, limit: str = "max_concurrent_calls", retry_in: float = 0.1, broken: bool = False):
        self.refusals, self.limit, self.retry_in, self.broken = refusals, limit, retry_in, broken
        self.tries = 0
        self.releases: list[tuple[str, int]] = []

    def try_acquire(self, *, account_id: int, limits: Limits, lease_seconds: float) -> Decision:
        if self.broken:
            raise LimiterUnavailable("redis: connection refused")
        self.tries += 1
        if self.tries <= self.refusals:
            return Decision(limit=self.limit, limit_value=1, retry_in=self.retry_in)
        return Decision(token=f"t{self.tries}")

    def release(self, *, account_id: int, token: str, tokens: int) -> None:
        self.releases.append((token, tokens))


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


class Inner:
    provider_key = "scripted"

    def __init__(self, error: Exception | None = None) -> None:
        self.requests: list[ModelRequest] = []
        self.error = error

    def complete(self, request: ModelRequest) -> ModelResponse:
        self.requests.append(request)
        if self.error:
            raise self.error
        return ModelResponse("scripted", "m", "stop", "hi", [], Usage(7, 3, 10))


def wrapped(limiter, inner=None, *, deadline=60.0, cancel=lambda: False):
    clock, events = Clock(), []
    provider = ThrottledProvider(
        inner or Inner(),
        limiter=limiter,
        account_id=1,
        limits=Limits(max_concurrent_calls=1),
        emit=lambda kind, payload: events.append((kind, payload)),
        deadline=clock.now + deadline,
        cancel=cancel,
        clock=clock,
        sleep=clock.sleep,
    )
    return provider, clock, events


def model_request(step_timeout: float = 30.0) -> ModelRequest:
    return ModelRequest(
        model="m", messages=[Message("user", "hi")], tools=[], step_timeout_seconds=step_timeout, metadata={"step_index": 2}
    )


def test_a_call_waits_for_a_slot_and_reports_the_wait():
    limiter = FakeLimiter(refusals=3)
    provider, _, events = wrapped(limiter)
    response = provider.complete(model_request())
    assert response.output_text == "hi" and limiter.releases == [("t4", 10)]
    assert [kind for kind, _ in events] == [PROVIDER_THROTTLE_WAITING, PROVIDER_THROTTLED]
    waiting, ended = events[0][1], events[1][1]
    assert (waiting["limit"], waiting["limit_value"], waiting["step_index"], waiting["provider_account_id"]) == (
        "max_concurrent_calls",
        1,
        2,
        1,
    )
    assert ended["acquired"] is True and 200 <= ended["waited_ms"] <= 400  # three polls of ~0.1 s


def test_a_call_with_a_free_slot_emits_nothing():
    provider, _, events = wrapped(FakeLimiter())
    provider.complete(model_request())
    assert events == []


def test_it_stops_waiting_before_the_deadline_and_never_calls_the_model():
    limiter, inner = FakeLimiter(refusals=10**6, limit="requests_per_minute", retry_in=30), Inner()
    provider, clock, events = wrapped(limiter, inner, deadline=5.0)
    with pytest.raises(ProviderError) as caught:
        provider.complete(model_request())
    assert caught.value.code == "rate_limit" and not caught.value.retryable
    assert "requests_per_minute" in caught.value.message and "deadline" in caught.value.message
    assert inner.requests == [] and limiter.releases == [] and clock.now <= 105.0
    assert events[-1][0] == PROVIDER_THROTTLED and events[-1][1]["acquired"] is False


def test_it_stops_waiting_when_the_case_is_cancelled():
    cancelled: list[bool] = []
    provider, _, _ = wrapped(FakeLimiter(refusals=10**6), cancel=lambda: len(cancelled) > 0)
    limiter = provider.limiter
    original = limiter.try_acquire

    def try_and_cancel(**kwargs):
        if limiter.tries == 2:
            cancelled.append(True)
        return original(**kwargs)

    limiter.try_acquire = try_and_cancel
    with pytest.raises(ProviderError):
        provider.complete(model_request())
    assert limiter.tries == 3


def test_the_call_after_a_wait_gets_only_the_time_left_as_its_step_timeout():
    inner = Inner()
    provider, _, _ = wrapped(FakeLimiter(refusals=20, retry_in=1.0), inner, deadline=40.0)
    provider.complete(model_request(step_timeout=30.0))
    assert 15 <= inner.requests[0].step_timeout_seconds <= 25  # ~20 s of the 40 were spent waiting


def test_the_slot_is_released_when_the_model_call_fails():
    limiter = FakeLimiter()
    provider, _, _ = wrapped(limiter, Inner(ProviderError("timeout", "slow", retryable=True)))
    with pytest.raises(ProviderError):
        provider.complete(model_request())
    assert limiter.releases == [("t1", 0)]


def test_an_unreachable_limiter_is_a_retryable_unavailable_provider_error():
    provider, _, _ = wrapped(FakeLimiter(broken=True))
    with pytest.raises(ProviderError) as caught:
        provider.complete(model_request())
    assert (caught.value.code, caught.value.retryable) == ("unavailable", True)

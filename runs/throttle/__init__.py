"""Provider account limits shared by every worker (docs/provider-limits.md).

:func:`limiter` picks the backend once per process: Redis when ``PROVIDER_LIMITS_REDIS_URL`` is
set (by default, whenever the Celery broker is Redis), else the database. :func:`throttled`
wraps a lane's provider so each model call takes a slot first.
"""

from __future__ import annotations

import dataclasses
import functools
import time
from collections.abc import Mapping
from typing import Any

from django.conf import settings

from engine.types import CancelCheck, Provider
from infrastructure.models import PROVIDER_LIMIT_FIELDS, ProviderAccount
from runs.throttle.base import LIMIT_NAMES, Decision, Limiter, LimiterUnavailable
from runs.throttle.database_limiter import DatabaseLimiter
from runs.throttle.provider import Emit, ThrottledProvider
from runs.throttle.redis_limiter import RedisLimiter

__all__ = [
    "DatabaseLimiter",
    "Decision",
    "Limiter",
    "LimiterUnavailable",
    "Limits",
    "RedisLimiter",
    "ThrottledProvider",
    "account_limits",
    "cached_account_limits",
    "limiter",
    "limits_cache_clear",
    "throttled",
]


@dataclasses.dataclass(frozen=True)
class Limits:
    """A provider account's limits; ``None`` is no limit."""

    max_concurrent_calls: int | None = None
    requests_per_minute: int | None = None
    tokens_per_minute: int | None = None

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any]) -> Limits:
        return cls(**{name: _positive(values.get(name)) for name in LIMIT_NAMES})

    def __bool__(self) -> bool:
        return any(self.value(name) for name in LIMIT_NAMES)

    def value(self, name: str) -> int | None:
        return getattr(self, name) if name in LIMIT_NAMES else None


def _positive(value: Any) -> int | None:
    try:
        number = int(value)
    except (TypeError, ValueError):
        return None
    return number if number >= 1 else None


@functools.cache
def limiter() -> Limiter:
    url = settings.PROVIDER_LIMITS_REDIS_URL
    return RedisLimiter(url) if url else DatabaseLimiter()


def account_limits(account_id: object) -> Limits:
    """The account's limits as they are now (an operator's change applies to the cases that start
    after it, within :data:`LIMITS_CACHE_SECONDS`)."""
    try:
        pk = int(account_id)  # type: ignore[call-overload]
    except (TypeError, ValueError):
        return Limits()
    row = ProviderAccount.objects.filter(pk=pk).values(*PROVIDER_LIMIT_FIELDS).first()
    return Limits.from_mapping(row or {})


# Each worker re-reads an account's limits at most this often (a case start costs no query).
LIMITS_CACHE_SECONDS = 10.0
_cache: dict[object, tuple[float, Limits]] = {}


def cached_account_limits(account_id: object) -> Limits:
    """:func:`account_limits`, remembered for :data:`LIMITS_CACHE_SECONDS` in this process."""
    now = time.monotonic()
    hit = _cache.get(account_id)
    if hit is not None and hit[0] > now:
        return hit[1]
    limits = account_limits(account_id)
    _cache[account_id] = (now + LIMITS_CACHE_SECONDS, limits)
    return limits


def limits_cache_clear() -> None:
    _cache.clear()


def throttled(
    provider: Provider,
    *,
    account_id: object,
    emit: Emit,
    run_timeout_seconds: float,
    cancel: CancelCheck,
    deadline_name: str = "the case deadline",
) -> Provider:
    """``provider`` behind its account's limits, or as is when the account has none.

    ``run_timeout_seconds`` (from now) is the deadline no wait passes; ``deadline_name`` words
    it in the error a call that could not get a slot in time fails with.
    """
    limits = cached_account_limits(account_id)
    if not limits:
        return provider
    return ThrottledProvider(
        provider,
        limiter=limiter(),
        account_id=int(account_id),  # type: ignore[call-overload]
        limits=limits,
        emit=emit,
        deadline=time.monotonic() + run_timeout_seconds,
        cancel=cancel,
        deadline_name=deadline_name,
    )

"""In-loop provider retries (spec runtime.md §3.3 step 5).

Up to three attempts per model call. Only failures that are marked retryable *and* carry the
code ``rate_limit``, ``timeout`` or ``unavailable`` are retried. The wait is ``Retry-After`` + 1 s
when the server gave one (delay-seconds or an HTTP date, read by ``errors.parse_retry_after``); otherwise a base backoff of 250 ms doubling per attempt (at least 2 s
for rate limits); then ±20 % jitter, never below the server's ``Retry-After``. The caller's
``may_wait`` vetoes a wait that would end past its deadline (the loop's run deadline), and
``on_retry`` reports each wait (the loop records a ``provider.call.retrying`` event with
:func:`retry_event_payload`). These are separate from Celery task retries.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import TypeVar

from engine.providers.errors import LOOP_RETRYABLE_CODES, RATE_LIMIT
from engine.types import JSON, ProviderError

T = TypeVar("T")

MAX_ATTEMPTS = 3
BASE_BACKOFF_SECONDS = 0.25
RATE_LIMIT_FLOOR_SECONDS = 2.0
RETRY_AFTER_PADDING_SECONDS = 1.0
JITTER = 0.2


def is_loop_retryable(error: ProviderError) -> bool:
    return error.retryable and error.code in LOOP_RETRYABLE_CODES


def retry_delay(error: ProviderError, attempt: int, rng: random.Random | None = None) -> float:
    """Seconds to wait after failed attempt number ``attempt`` (1-based)."""
    if error.retry_after is not None:
        base = error.retry_after + RETRY_AFTER_PADDING_SECONDS
    else:
        base = BASE_BACKOFF_SECONDS * (2 ** (attempt - 1))
        if error.code == RATE_LIMIT:
            base = max(base, RATE_LIMIT_FLOOR_SECONDS)
    factor = (rng or random).uniform(1 - JITTER, 1 + JITTER)
    if error.retry_after is not None:  # jitter may add to the server's wait, never cut it
        return max(error.retry_after, base * factor)
    return base * factor


def retry_event_payload(provider_key: str, error: ProviderError, attempt: int, delay: float) -> dict[str, JSON]:
    """What a ``provider.call.retrying`` event records about one wait before a retry."""
    return {
        "provider_key": provider_key,
        "code": error.code,
        "attempt": attempt,
        "delay_ms": int(delay * 1000),
        "retry_after_ms": None if error.retry_after is None else int(error.retry_after * 1000),
        "message": error.message,
    }


def call_with_retries(
    call: Callable[[], T],
    *,
    sleep: Callable[[float], None],
    on_retry: Callable[[ProviderError, int, float], object] | None = None,
    may_wait: Callable[[float], bool] | None = None,
    rng: random.Random | None = None,
    max_attempts: int = MAX_ATTEMPTS,
) -> T:
    """Run ``call``; retry loop-retryable :class:`ProviderError`s, re-raising the last one.

    ``may_wait(delay)`` lets the caller veto a retry (run deadline near, run cancelled); the
    last error is then raised as is.
    """
    attempt = 0
    while True:
        attempt += 1
        try:
            return call()
        except ProviderError as error:
            if attempt >= max_attempts or not is_loop_retryable(error):
                raise
            delay = retry_delay(error, attempt, rng)
            if may_wait is not None and not may_wait(delay):
                raise
            if on_retry is not None:
                on_retry(error, attempt, delay)
            sleep(delay)

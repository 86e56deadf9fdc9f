"""429 and 503 are retried: after ``Retry-After`` (seconds or an HTTP date), else a doubling backoff.

Both statuses say the request was not processed (throttled, or the server is restarting or
overloaded), so every method is retried, ``POST`` included. The retries are bounded twice: at
most ``attempts`` requests in all, and at most ``max_wait`` seconds slept for one request; a
``Retry-After`` longer than what is left is not waited for at all (the command fails at once and
says so). The same policy serves the AgentClash API and the GitHub API (``github.py``).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import email.utils
from collections.abc import Callable

import httpx

RETRY_STATUSES = frozenset({429, 503})


@dataclasses.dataclass(frozen=True)
class RetryPolicy:
    attempts: int = 5  # requests in all, the first one included
    max_wait: float = 120.0  # seconds slept in all for one request
    backoff: float = 1.0  # without Retry-After: 1, 2, 4, … seconds


def retry_after(value: str | None, *, now: dt.datetime) -> float | None:
    """Seconds to wait from a ``Retry-After`` header: delta-seconds or an HTTP date (RFC 9110
    §10.2.3); None when absent or unreadable, 0 for a date in the past."""
    text = (value or "").strip()
    if not text:
        return None
    if text.isdigit():
        return float(text)
    try:
        when = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.UTC)
    return max(0.0, (when - now).total_seconds())


def _utcnow() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def send(
    request: Callable[[], httpx.Response],
    *,
    policy: RetryPolicy,
    sleep: Callable[[float], None],
    note: Callable[[str], None],
    what: str,
    now: Callable[[], dt.datetime] = _utcnow,
) -> tuple[httpx.Response, str]:
    """``request()`` until it answers something else than 429/503 or the policy says stop.

    Returns the last response and, when it is still a 429/503, why the CLI stopped retrying
    (empty otherwise); ``note`` is told of every wait (one line on stderr)."""
    waited = 0.0
    for attempt in range(1, policy.attempts + 1):
        response = request()
        if response.status_code not in RETRY_STATUSES:
            return response, ""
        if attempt == policy.attempts:
            return response, f"gave up after {attempt} attempts"
        delay = retry_after(response.headers.get("Retry-After"), now=now())
        if delay is None:
            delay = policy.backoff * 2 ** (attempt - 1)
        if waited + delay > policy.max_wait:
            return response, f"not retried: waiting {delay:g}s more would exceed the {policy.max_wait:g}s the CLI waits in all"
        note(f"HTTP {response.status_code} from {what}; retrying in {delay:g}s (attempt {attempt + 1} of {policy.attempts})")
        sleep(delay)
        waited += delay
    raise AssertionError("unreachable: the loop returns on its last attempt")

"""What every limiter backend shares: the limits' names, one decision, the backend's shape.

The limits themselves (:class:`runs.throttle.Limits`) live with the reading of an account's
limits and ``throttled``, which decides that an account without any needs no limiter; the
backends only read them.

A backend answers one question atomically across every worker: may this provider account start
one more model call now? If yes it records the call (a concurrency lease that expires, and an
entry in the one-minute windows) and hands back a token; :meth:`Limiter.release` ends the lease
and adds the call's tokens to the tokens-per-minute window.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:  # a type only: the backends never build limits
    from runs.throttle import Limits

WINDOW_SECONDS = 60.0  # requests_per_minute and tokens_per_minute count the last 60 s (sliding)

MAX_CONCURRENT_CALLS = "max_concurrent_calls"
REQUESTS_PER_MINUTE = "requests_per_minute"
TOKENS_PER_MINUTE = "tokens_per_minute"
LIMIT_NAMES = (MAX_CONCURRENT_CALLS, REQUESTS_PER_MINUTE, TOKENS_PER_MINUTE)


@dataclasses.dataclass(frozen=True)
class Decision:
    """A backend's answer: a ``token`` when the call may start, else the limit that is full and
    ``retry_in``, the seconds until it may free up (a hint: a concurrency slot frees whenever a
    call ends, so for that limit it is only a polling interval)."""

    token: str | None = None
    limit: str = ""
    limit_value: int = 0
    retry_in: float = 0.0

    @property
    def granted(self) -> bool:
        return self.token is not None


class Limiter(Protocol):
    name: str

    def try_acquire(self, *, account_id: int, limits: Limits, lease_seconds: float) -> Decision: ...

    def release(self, *, account_id: int, token: str, tokens: int) -> None: ...


class LimiterUnavailable(Exception):
    """The backend could not be reached (Redis down, database locked past its timeout)."""

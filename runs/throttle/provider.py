"""A provider that takes a slot of its account's limits before every model call (docs/provider-limits.md).

The engine stays pure: it calls ``provider.complete(request)`` as always. This wrapper, built
by the worker around the real adapter, asks the limiter first and waits while the account is
full — never past the case's deadline and never after a cancel — reporting the wait as events
(``provider.throttle.waiting`` when it starts, ``provider.throttled`` when it ends). After the
call it releases the slot and records the tokens used.
"""

from __future__ import annotations

import dataclasses
import logging
import random
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from engine.events import PROVIDER_THROTTLE_WAITING, PROVIDER_THROTTLED
from engine.providers.errors import RATE_LIMIT, UNAVAILABLE
from engine.types import JSON, CancelCheck, ModelRequest, ModelResponse, Provider, ProviderError
from runs.throttle.base import Decision, Limiter, LimiterUnavailable

if TYPE_CHECKING:
    from runs.throttle import Limits

logger = logging.getLogger(__name__)

# A lease outlives its call's step timeout by this much; a killed worker's slot frees after it.
LEASE_MARGIN_SECONDS = 30.0
MAX_POLL_SECONDS = 1.0  # waits are re-checked at least this often (cancel, a slot freed early)
POLL_JITTER = 0.2

Emit = Callable[[str, dict[str, JSON]], object]


class ThrottledProvider:
    def __init__(
        self,
        inner: Provider,
        *,
        limiter: Limiter,
        account_id: int,
        limits: Limits,
        emit: Emit,
        deadline: float,
        cancel: CancelCheck,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
        deadline_name: str = "the case deadline",
    ) -> None:
        self.inner, self.limiter, self.account_id, self.limits = inner, limiter, account_id, limits
        self.deadline_name = deadline_name
        self.provider_key = inner.provider_key
        self.emit, self.deadline, self.cancel, self.clock, self.sleep = emit, deadline, cancel, clock, sleep

    def complete(self, request: ModelRequest) -> ModelResponse:
        token = self._acquire(request)
        tokens = 0
        try:
            response = self.inner.complete(self._within_deadline(request))
            tokens = response.usage.total_tokens or response.usage.input_tokens + response.usage.output_tokens
            return response
        finally:
            try:
                self.limiter.release(account_id=self.account_id, token=token, tokens=tokens)
            except LimiterUnavailable:
                logger.warning("releasing a call of provider account %s failed; its lease expires on its own", self.account_id)

    def _within_deadline(self, request: ModelRequest) -> ModelRequest:
        """The step timeout the engine computed before the wait, shortened to the time left."""
        left = max(0.001, self.deadline - self.clock())
        return request if request.step_timeout_seconds <= left else dataclasses.replace(request, step_timeout_seconds=left)

    def _try(self, request: ModelRequest) -> Decision:
        lease = max(1.0, request.step_timeout_seconds) + LEASE_MARGIN_SECONDS
        try:
            return self.limiter.try_acquire(account_id=self.account_id, limits=self.limits, lease_seconds=lease)
        except LimiterUnavailable as exc:
            logger.warning("provider limits of account %s unavailable: %s", self.account_id, exc)
            raise ProviderError(UNAVAILABLE, "the provider account's limits could not be checked", retryable=True) from None

    def _acquire(self, request: ModelRequest) -> str:
        started = self.clock()
        first: Decision | None = None
        while True:
            decision = self._try(request)
            if decision.token is not None:
                if first is not None:
                    self._ended(request, first, started, acquired=True)
                return decision.token
            if first is None:
                first = decision
                self.emit(PROVIDER_THROTTLE_WAITING, {**self._payload(request, decision), "retry_in_ms": int(decision.retry_in * 1000)})
            pause = min(decision.retry_in, MAX_POLL_SECONDS) * random.uniform(1 - POLL_JITTER, 1 + POLL_JITTER)
            if self.cancel() or self.clock() + pause >= self.deadline:
                self._ended(request, first, started, acquired=False)
                waited = self.clock() - started
                raise ProviderError(
                    RATE_LIMIT,
                    f"waited {waited:.1f}s for the provider account's {decision.limit} limit ({decision.limit_value}); "
                    f"{self.deadline_name} came first",
                )
            self.sleep(pause)

    def _payload(self, request: ModelRequest, decision: Decision) -> dict[str, JSON]:
        return {
            "provider_key": self.provider_key,
            "provider_account_id": self.account_id,
            "limit": decision.limit,
            "limit_value": decision.limit_value,
            "step_index": request.metadata.get("step_index"),
        }

    def _ended(self, request: ModelRequest, first: Decision, started: float, *, acquired: bool) -> None:
        waited_ms = int((self.clock() - started) * 1000)
        self.emit(PROVIDER_THROTTLED, {**self._payload(request, first), "waited_ms": waited_ms, "acquired": acquired})

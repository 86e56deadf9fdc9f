"""API throttles whose rates are read at request time, and the bearer-token failure budget.

DRF's own throttle classes copy ``DEFAULT_THROTTLE_RATES`` when they are imported, so a test
that overrides the rates would not be seen; these read ``api_settings`` each time.
"""

from __future__ import annotations

import time
from typing import Any

from django.core.cache import cache
from django.core.exceptions import ImproperlyConfigured
from rest_framework import exceptions, throttling
from rest_framework.settings import api_settings


class _LiveRates(throttling.SimpleRateThrottle):
    def get_rate(self) -> str | None:
        scope = getattr(self, "scope", None)
        if scope not in api_settings.DEFAULT_THROTTLE_RATES:
            raise ImproperlyConfigured(f"No default throttle rate set for '{scope}' scope")
        rate = api_settings.DEFAULT_THROTTLE_RATES[scope]
        return None if rate is None else str(rate)


class AnonRateThrottle(_LiveRates, throttling.AnonRateThrottle):
    """Unauthenticated API requests per client address (scope ``anon``)."""


class UserRateThrottle(_LiveRates, throttling.UserRateThrottle):
    """Authenticated API requests per user (scope ``user``)."""


class TokenAuthFailureThrottle(_LiveRates):
    """Failed bearer-token authentications per client address (scope ``token_auth_failure``).

    Authentication runs before DRF's throttles, so a client guessing tokens only ever sees 401s;
    the authenticator consults this budget instead. Once a client address has used it up, every
    bearer token from it is refused with 429 until the window passes, so guessing cannot continue
    even with a correct token in the mix.
    """

    scope = "token_auth_failure"

    def __init__(self) -> None:
        self.rate = self.get_rate()
        num_requests, duration = self.parse_rate(self.rate)
        self.limit: int = num_requests or 0
        self.window: int = duration or 0

    def get_cache_key(self, request: Any, view: Any = None) -> str:
        return self.cache_format % {"scope": self.scope, "ident": self.get_ident(request)}

    def _history(self, key: str, now: float) -> list[float]:
        return [stamp for stamp in cache.get(key, []) if stamp > now - self.window]

    def check(self, request: Any) -> None:
        """Raise 429 when this client address has no failures left in the window."""
        if self.rate is None:
            return
        now = time.time()
        history = self._history(self.get_cache_key(request), now)
        if len(history) >= self.limit:
            raise exceptions.Throttled(wait=max(0.0, self.window - (now - history[-1])))

    def record_failure(self, request: Any) -> None:
        if self.rate is None:
            return
        now = time.time()
        key = self.get_cache_key(request)
        history = self._history(key, now)
        history.insert(0, now)
        cache.set(key, history[: self.limit], self.window)

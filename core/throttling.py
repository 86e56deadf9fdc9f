"""API throttles: fixed-window counters that hold across connections and processes.

Every throttle counts with the cache's atomic ``incr`` on one key per (scope, client, window): no
history list is read, changed and written back, so concurrent requests cannot both see "one
left". The counters are shared by every web process when the cache is (``CACHE_URL=redis://…``;
the default in-memory cache counts per process). A window is ``duration`` seconds long and starts
on a multiple of it, so a client can spend one window's budget at its end and the next one's at
once: at most twice the rate over a short span, never more.

The rates are read at request time (DRF's own classes copy ``DEFAULT_THROTTLE_RATES`` when they
are imported, so a test that overrides them would not be seen). Each answer under ``/api/``
carries ``RateLimit-Limit``, ``RateLimit-Remaining`` and ``RateLimit-Reset`` (seconds) for the
budget that applied to it (:func:`ratelimit_headers`).
"""

from __future__ import annotations

import dataclasses
import math
import time
from typing import Any

from django.core.cache import cache
from django.core.exceptions import ImproperlyConfigured
from django.http import HttpRequest, HttpResponse
from rest_framework import exceptions, throttling
from rest_framework.settings import api_settings

# The attribute of the Django request the applied budget is kept on, for the response headers.
_STATE_ATTRIBUTE = "ratelimit_state"


@dataclasses.dataclass(frozen=True)
class RateState:
    """A budget after one request: ``limit`` per window, ``remaining`` in this one, ``reset`` seconds to the next."""

    limit: int
    remaining: int
    reset: int
    allowed: bool


def parse_rate(rate: str) -> tuple[int, int]:
    """``"20/min"`` → (20, 60): requests and seconds (``s``, ``m``/``min``, ``h``, ``d`` as DRF reads them)."""
    number, _, period = rate.partition("/")
    seconds = {"s": 1, "m": 60, "h": 3600, "d": 86400}.get(period.strip()[:1])
    if not number.strip().isdigit() or seconds is None:
        raise ImproperlyConfigured(f"A throttle rate is '<number>/<s|min|h|day>', not {rate!r}")
    return int(number), seconds


def _window(scope: str, ident: str, duration: int) -> tuple[str, int]:
    now = time.time()
    window = int(now // duration)
    return f"ratelimit:{scope}:{ident}:{window}", max(1, math.ceil((window + 1) * duration - now))


def window_hit(scope: str, ident: str, rate: str) -> RateState:
    """Count one request against ``rate`` for ``ident`` (atomic) and say whether it is within budget."""
    limit, duration = parse_rate(rate)
    key, reset = _window(scope, ident, duration)
    cache.add(key, 0, timeout=duration + 1)
    try:
        count = cache.incr(key)
    except ValueError:  # the key expired between add and incr: this request opens the window
        cache.add(key, 1, timeout=duration + 1)
        count = 1
    return RateState(limit=limit, remaining=max(0, limit - count), reset=reset, allowed=count <= limit)


def window_peek(scope: str, ident: str, rate: str) -> RateState:
    """The budget left for ``ident`` without counting a request."""
    limit, duration = parse_rate(rate)
    key, reset = _window(scope, ident, duration)
    count = int(cache.get(key) or 0)
    return RateState(limit=limit, remaining=max(0, limit - count), reset=reset, allowed=count < limit)


def live_rate(scope: str) -> str | None:
    if scope not in api_settings.DEFAULT_THROTTLE_RATES:
        raise ImproperlyConfigured(f"No default throttle rate set for '{scope}' scope")
    rate = api_settings.DEFAULT_THROTTLE_RATES[scope]
    return None if rate is None else str(rate)


def _remember(request: Any, state: RateState) -> None:
    """Keep the tightest budget that applied to this request for its response headers."""
    django_request = getattr(request, "_request", request)
    current: RateState | None = getattr(django_request, _STATE_ATTRIBUTE, None)
    if current is None or state.remaining < current.remaining or not state.allowed:
        setattr(django_request, _STATE_ATTRIBUTE, state)


class _WindowThrottle(throttling.SimpleRateThrottle):
    state: RateState | None = None

    def __init__(self) -> None:  # the rate is read per request (allow_request), not at construction
        pass

    def get_rate(self) -> str | None:
        return live_rate(str(self.scope))

    def allow_request(self, request: Any, view: Any) -> bool:
        rate = self.get_rate()
        ident = self.get_cache_key(request, view) if rate is not None else None
        if rate is None or ident is None:
            return True
        self.state = window_hit(str(self.scope), ident, rate)
        _remember(request, self.state)
        return self.state.allowed

    def wait(self) -> float | None:
        return None if self.state is None else float(self.state.reset)


class AnonRateThrottle(_WindowThrottle, throttling.AnonRateThrottle):
    """Unauthenticated API requests per client address (scope ``anon``)."""

    def get_cache_key(self, request: Any, view: Any) -> str | None:
        return None if request.user and request.user.is_authenticated else self.get_ident(request)


class UserRateThrottle(_WindowThrottle, throttling.UserRateThrottle):
    """Authenticated API requests per user (scope ``user``), over every connection and token of the user."""

    def get_cache_key(self, request: Any, view: Any) -> str | None:
        return str(request.user.pk) if request.user and request.user.is_authenticated else None


class TokenAuthFailureThrottle(throttling.BaseThrottle):
    """Failed bearer-token authentications per client address (scope ``token_auth_failure``).

    Authentication runs before DRF's throttles, so the authenticator asks this budget itself, and
    only about tokens that failed: past the budget a *bad* token is answered 429 (``Retry-After``)
    instead of 401, so a client guessing tokens is slowed down, while a valid token from the same
    address (a shared NAT, a CI fleet) is never refused for its neighbours' mistakes.
    """

    scope = "token_auth_failure"

    def failure(self, request: Any) -> exceptions.APIException | None:
        """Count one failed token from this address; the 429 to raise when it is over the budget."""
        rate = live_rate(self.scope)
        if rate is None:
            return None
        state = window_hit(self.scope, self.get_ident(request), rate)
        if state.allowed:
            return None
        _remember(request, state)
        return exceptions.Throttled(wait=state.reset)


def ratelimit_headers(request: HttpRequest, response: HttpResponse) -> None:
    """``RateLimit-Limit``/``-Remaining``/``-Reset`` for the budget the request counted against;
    one that no throttle saw (refused before them, or not an API view) shows the address's anonymous budget."""
    if "RateLimit-Limit" in response:  # a view that counts its own budget (the hosted callback) said it
        return
    state: RateState | None = getattr(request, _STATE_ATTRIBUTE, None)
    if state is None:
        rate = live_rate("anon")
        if rate is None:
            return
        state = window_peek("anon", _address(request), rate)
    response["RateLimit-Limit"] = str(state.limit)
    response["RateLimit-Remaining"] = str(state.remaining)
    response["RateLimit-Reset"] = str(state.reset)


def _address(request: HttpRequest) -> str:
    """The client address as DRF's throttles see it (``NUM_PROXIES``; it reads only ``META``)."""
    django_request: Any = request
    return throttling.BaseThrottle().get_ident(django_request)

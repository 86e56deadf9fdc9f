"""The client address behind our own proxies, for login lockout and API throttling."""

from __future__ import annotations

from typing import Any

from django.conf import settings


def client_ip(request: Any) -> str:
    """REMOTE_ADDR, or the address TRUSTED_PROXY_COUNT hops back in X-Forwarded-For.

    Only the entries our own proxies appended can be trusted; anything further left was sent by
    the client. Mirrors DRF's ``NUM_PROXIES`` so lockout and throttles agree on who a client is.
    """
    remote = request.META.get("REMOTE_ADDR", "") or ""
    count = int(getattr(settings, "TRUSTED_PROXY_COUNT", 0) or 0)
    forwarded = request.META.get("HTTP_X_FORWARDED_FOR", "")
    if count > 0 and forwarded:
        hops = [hop.strip() for hop in forwarded.split(",") if hop.strip()]
        if hops:
            return hops[-min(count, len(hops))]
    return remote

"""Handing a case to a hosted agent: one POST to its endpoint, through the network guard.

The endpoint is checked again here with the provider base-URL rules (it may have started to
resolve somewhere else since it was saved) and the connection is pinned to the addresses that
check accepted, so a DNS answer that changes between check and connect can't redirect it. No
redirects are followed, the answer is bounded in time and size, and the only credential sent is
the case's own callback token (inside the body).
"""

from __future__ import annotations

import ipaddress
import json
from typing import Any

from django.conf import settings

from engine.net.guard import NetworkPolicyError, send
from infrastructure.base_url import BaseUrlError, Resolver, base_url_check
from infrastructure.connection import ANY_ADDRESS

JSON = Any


class DispatchFailed(Exception):
    """The agent did not accept the case; ``retryable`` when another attempt might succeed."""

    def __init__(self, message: str, *, retryable: bool) -> None:
        super().__init__(message)
        self.retryable = retryable


def case_dispatch(endpoint_url: str, case: dict[str, JSON], *, resolver: Resolver | None = None) -> int:
    """POST the case; returns the agent's 2xx status. Raises DispatchFailed with a safe message."""
    allow_private = bool(settings.ALLOW_PRIVATE_PROVIDER_URLS)
    try:
        addresses = base_url_check(endpoint_url, allow_private=allow_private, resolver=resolver)
    except BaseUrlError as exc:
        raise DispatchFailed(f"the agent endpoint is not allowed: {exc}", retryable=False) from None
    allowlist = list(ANY_ADDRESS) if allow_private else [str(ipaddress.ip_network(ip)) for ip in addresses]
    try:
        response = send(
            "POST",
            endpoint_url,
            headers={"Content-Type": "application/json", "Accept": "application/json", "User-Agent": "AgentClash-hosted/1"},
            body=json.dumps(case, separators=(",", ":"), default=str).encode(),
            timeout=float(settings.HOSTED_DISPATCH_TIMEOUT_SECONDS),
            allowlist=allowlist,
            resolver=resolver,
            max_response_bytes=int(settings.HOSTED_DISPATCH_MAX_RESPONSE_BYTES),
            max_redirects=0,
            carries_secret=True,
        )
    except NetworkPolicyError as exc:
        refused_redirect = "redirect" in str(exc)  # never followed: another attempt would meet it again
        raise DispatchFailed(f"could not deliver the case to the agent endpoint: {exc}", retryable=not refused_redirect) from None
    if 300 <= response.status_code < 400:
        raise DispatchFailed(f"the agent endpoint answered HTTP {response.status_code}; redirects are not followed", retryable=False)
    if response.status_code >= 500:
        raise DispatchFailed(f"the agent endpoint answered HTTP {response.status_code}", retryable=True)
    if not 200 <= response.status_code < 300:
        raise DispatchFailed(f"the agent endpoint refused the case (HTTP {response.status_code})", retryable=False)
    return response.status_code

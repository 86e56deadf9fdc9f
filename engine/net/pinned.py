"""The pinned-address httpx(2) transport every provider SDK client connects through.

A provider's base URL is operator-configured, so the rule is the provider one (spec runtime.md
§7.4), not the pack egress policy: the address must be public unless the operator allows private
provider URLs (``ALLOW_PRIVATE_PROVIDER_URLS``, for a local vLLM or Ollama server); cloud metadata,
unspecified and multicast addresses are refused even then.

:class:`PinnedTransport` resolves a host **once**, checks every address of the answer, and from
then on connects only to those addresses for the life of the transport: the request URL's host is
replaced by the checked IP while the ``Host`` header and TLS SNI/certificate checks keep the
original name. A later DNS answer (rebinding, a poisoned cache) can never move the connection.
A host the transport has not seen (a redirect, a second endpoint) goes through the same check.

Built on ``httpx2``, the drop-in fork of httpx that the openai, anthropic and google-genai SDKs
use (they refuse a plain ``httpx.Client``); the agent-traffic guard (``guard.py``) stays on httpx.
"""

from __future__ import annotations

import ipaddress
import threading
from collections.abc import Iterable

import httpx2

from engine.net.guard import (
    ALWAYS_REFUSED,
    METADATA_HOSTS,
    METADATA_NETWORKS,
    IPAddress,
    NetworkPolicyError,
    Resolver,
    classify_address,
    host_key,
    parse_ip_literal,
    system_resolver,
)

_DEFAULT_PORTS = {"http": 80, "https": 443}


def provider_address_refusal(address: IPAddress, *, allow_private: bool) -> str | None:
    """Why a provider endpoint may not use ``address`` (a short code), or None. Pure."""
    candidates: list[IPAddress] = [address]
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        candidates.append(address.ipv4_mapped)
    if any(c.version == n.version and c in n for c in candidates for n in METADATA_NETWORKS):
        return "metadata"
    reason = classify_address(address)
    if reason is None or (allow_private and reason not in ALWAYS_REFUSED):
        return None
    return reason


def resolve_pinned(host: str, port: int, *, allow_private: bool, resolver: Resolver | None = None) -> list[IPAddress]:
    """Resolve ``host`` once and return every address of the answer, refusing if ANY is refused.

    Raises :class:`NetworkPolicyError` (``reason`` = the refusal code or ``dns_failed``).
    """
    if host_key(host) in METADATA_HOSTS:
        raise NetworkPolicyError("the provider host is a cloud metadata name", "metadata")
    literal = parse_ip_literal(host)
    if literal is not None:
        addresses = [literal]
    else:
        try:
            answers = (resolver or system_resolver)(host, port)
            addresses = [ipaddress.ip_address(str(a).split("%", 1)[0]) for a in answers]
        except Exception as exc:  # any resolver failure is "could not resolve"
            raise NetworkPolicyError(f"could not resolve the provider host {host!r}", "dns_failed") from exc
        if not addresses:
            raise NetworkPolicyError(f"could not resolve the provider host {host!r}", "dns_failed")
    for address in addresses:
        reason = provider_address_refusal(address, allow_private=allow_private)
        if reason is not None:
            hint = "" if allow_private else " (private provider URLs are not enabled)"
            raise NetworkPolicyError(f"the provider host {host!r} resolves to a refused address: {reason}{hint}", reason)
    return addresses


class PinnedTransport(httpx2.BaseTransport):
    """An httpx transport that connects only to addresses checked once per ``(host, port)``."""

    def __init__(
        self,
        *,
        allow_private: bool = False,
        resolver: Resolver | None = None,
        inner: httpx2.BaseTransport | None = None,
    ) -> None:
        self.allow_private = allow_private
        self._resolver = resolver
        # No proxies from the environment: a proxy would make the pin meaningless.
        self._inner = inner or httpx2.HTTPTransport(trust_env=False, retries=0)
        self._pins: dict[tuple[str, int], list[IPAddress]] = {}
        self._lock = threading.Lock()

    def pinned(self, host: str, port: int) -> list[IPAddress]:
        """The checked addresses for ``host:port``, resolving and checking on first use only."""
        key = (host_key(host), port)
        with self._lock:
            found = self._pins.get(key)
            if found is None:
                found = resolve_pinned(host, port, allow_private=self.allow_private, resolver=self._resolver)
                self._pins[key] = found
            return list(found)

    def pin_url(self, url: str | httpx2.URL) -> list[IPAddress]:
        parsed = httpx2.URL(str(url))
        return self.pinned(parsed.host, parsed.port or _DEFAULT_PORTS.get(parsed.scheme, 443))

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        original = request.url
        addresses = self.pinned(original.host, original.port or _DEFAULT_PORTS.get(original.scheme, 443))
        if "host" not in request.headers:
            request.headers["Host"] = original.netloc.decode("ascii")
        if original.scheme == "https":
            request.extensions["sni_hostname"] = original.host
        last_error: httpx2.ConnectError | None = None
        for address in addresses:
            request.url = original.copy_with(host=str(address))
            try:
                return self._inner.handle_request(request)
            except httpx2.ConnectError as exc:  # nothing was sent; the next checked address may answer
                last_error = exc
            finally:
                request.url = original
        assert last_error is not None
        raise last_error

    def close(self) -> None:
        self._inner.close()


def pinned_http_client(
    *,
    allow_private: bool = False,
    resolver: Resolver | None = None,
    timeout: float = 60.0,
    headers: Iterable[tuple[str, str]] = (),
) -> httpx2.Client:
    """An ``httpx2.Client`` for an SDK's ``http_client``: pinned, no env proxies, no redirects.

    Redirects are not followed: a provider API does not redirect, and following one would carry
    vendor credential headers (``x-api-key``, ``x-goog-api-key``) to wherever it points.
    """
    return httpx2.Client(
        transport=PinnedTransport(allow_private=allow_private, resolver=resolver),
        trust_env=False,
        follow_redirects=False,
        timeout=timeout,
        headers=list(headers),
    )


def policy_refusal_in(exc: BaseException | None) -> NetworkPolicyError | None:
    """The :class:`NetworkPolicyError` an SDK wrapped (``raise … from``), if any."""
    seen = 0
    while exc is not None and seen < 10:
        if isinstance(exc, NetworkPolicyError):
            return exc
        exc = exc.__cause__ or exc.__context__
        seen += 1
    return None

"""Worker-side network guard for ``http_request``.

Pure classification functions (no I/O) decide which addresses are reachable. ``send`` resolves a
host once, checks every address, then connects to the checked address itself (the URL host is
replaced by the IP; ``Host`` and TLS SNI/certificate checks keep the original name), so a second
DNS answer can never redirect the connection. Every redirect hop goes through the same gate.
"""

from __future__ import annotations

import dataclasses
import ipaddress
import re
import socket
import ssl
import time
import urllib.parse
from collections.abc import Callable, Iterable, Sequence

import httpx

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network
Resolver = Callable[[str, int], list[str]]

MAX_REDIRECTS = 5
MAX_REQUEST_BODY_BYTES = 1_048_576
MAX_RESPONSE_BODY_BYTES = 5_242_880
DEFAULT_TIMEOUT = 30.0
MAX_TIMEOUT = 60.0

CGNAT = ipaddress.ip_network("100.64.0.0/10")
NAT64 = ipaddress.ip_network("64:ff9b::/96")
IPV4_COMPAT = ipaddress.ip_network("::/96")
SITE_LOCAL = ipaddress.ip_network("fec0::/10")
_NUMERIC_HOST = re.compile(r"^[0-9a-fA-FxX.]+$")

SENSITIVE_HEADERS = frozenset(
    """authorization proxy-authorization www-authenticate proxy-authenticate cookie set-cookie
    x-api-key x-apikey api-key apikey x-auth-token x-access-token x-access-key x-secret-key
    x-session-token x-session-id x-csrf-token x-xsrf-token x-amz-security-token x-goog-api-key
    x-goog-iam-authorization-token token""".split()
)


class NetworkPolicyError(Exception):
    """A refusal or failure whose message is safe to show to the model (never exception text)."""


# ----------------------------------------------------------------------------- pure functions
def parse_ip_literal(host: str) -> IPAddress | None:
    """An IP written as a URL host, including legacy numeric forms (2130706433, 0x7f.1, 127.1)."""
    h = host.strip().rstrip(".")
    if h.startswith("[") and h.endswith("]"):
        h = h[1:-1]
    if "%" in h:
        h = h.split("%", 1)[0]
    try:
        return ipaddress.ip_address(h)
    except ValueError:
        pass
    if h and _NUMERIC_HOST.match(h) and any(c.isdigit() for c in h):
        try:
            return ipaddress.IPv4Address(socket.inet_aton(h))
        except OSError:
            return None
    return None


def _as_ip(address: str | IPAddress) -> IPAddress:
    if isinstance(address, (ipaddress.IPv4Address, ipaddress.IPv6Address)):
        return address
    parsed = parse_ip_literal(str(address))
    if parsed is None:
        raise ValueError(f"not an IP address: {address!r}")
    return parsed


def classify_address(address: str | IPAddress) -> str | None:
    """Why an address is blocked (``loopback``, ``private``, ``cgnat``…), or None when public."""
    ip = _as_ip(address)
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return "ipv4_mapped" if classify_address(ip.ipv4_mapped) else None
        if ip in IPV4_COMPAT and int(ip) > 1:
            return "ipv4_compatible"
        if ip.sixtofour is not None and classify_address(ip.sixtofour):
            return "6to4"
        if ip.teredo is not None:
            return "teredo"
        if ip in NAT64:
            embedded = ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
            return "nat64" if classify_address(embedded) else None
        if ip in SITE_LOCAL:
            return "site_local"
    if ip.is_unspecified:
        return "unspecified"
    if ip.is_loopback:
        return "loopback"
    if ip.is_link_local:
        return "link_local"
    if ip.is_multicast:
        return "multicast"
    if isinstance(ip, ipaddress.IPv4Address) and ip in CGNAT:
        return "cgnat"
    if ip.is_private:
        return "private"
    if ip.is_reserved:
        return "reserved"
    if not ip.is_global:
        return "non_global"
    return None


def parse_allowlist(entries: Iterable[str]) -> list[Network]:
    return [ipaddress.ip_network(str(e).strip(), strict=False) for e in entries]


def in_allowlist(address: str | IPAddress, allowlist: Sequence[Network]) -> bool:
    ip = _as_ip(address)
    candidates: list[IPAddress] = [ip]
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        candidates.append(ip.ipv4_mapped)
    return any(c.version == n.version and c in n for c in candidates for n in allowlist)


def is_blocked_address(address: str | IPAddress, allowlist: Sequence[Network] | Iterable[str] = ()) -> bool:
    """Blocked unless inside an allowlist CIDR. A non-empty allowlist means ONLY those CIDRs."""
    nets = [
        n if isinstance(n, (ipaddress.IPv4Network, ipaddress.IPv6Network)) else ipaddress.ip_network(str(n).strip(), strict=False)
        for n in allowlist
    ]
    if nets:
        return not in_allowlist(address, nets)
    return classify_address(address) is not None


def redact_headers(headers: dict[str, str]) -> dict[str, str]:
    return {k: ("[redacted]" if k.lower() in SENSITIVE_HEADERS else v) for k, v in headers.items()}


def clamp_timeout(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        return DEFAULT_TIMEOUT
    return float(min(value, MAX_TIMEOUT))


# ----------------------------------------------------------------------------- I/O
def system_resolver(host: str, port: int) -> list[str]:
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    seen: list[str] = []
    for info in infos:
        addr = str(info[4][0]).split("%", 1)[0]
        if addr not in seen:
            seen.append(addr)
    return seen


@dataclasses.dataclass(slots=True)
class Target:
    url: httpx.URL  # as the model wrote it (after redirects)
    host: str
    ip: IPAddress


def check_target(url: str | httpx.URL, allowlist: Sequence[Network], resolver: Resolver | None = None) -> Target:
    try:
        parsed = httpx.URL(str(url))
    except Exception as exc:
        raise NetworkPolicyError("invalid url") from exc
    if parsed.scheme not in ("http", "https"):
        raise NetworkPolicyError("unsupported URL scheme")
    host = parsed.host
    if not host:
        raise NetworkPolicyError("url host is required")
    if parsed.userinfo:
        raise NetworkPolicyError("credentials in the URL are not allowed; use headers")
    port = parsed.port or (443 if parsed.scheme == "https" else 80)
    literal = parse_ip_literal(host)
    if literal is not None:
        if is_blocked_address(literal, allowlist):
            raise NetworkPolicyError("target host is blocked by network policy")
        return Target(url=parsed, host=host, ip=literal)
    try:
        addresses = (resolver or system_resolver)(host, port)
    except Exception as exc:
        raise NetworkPolicyError("dns resolution failed") from exc
    if not addresses:
        raise NetworkPolicyError("dns resolution failed")
    ips: list[IPAddress] = []
    for addr in addresses:
        try:
            ips.append(_as_ip(addr))
        except ValueError as exc:
            raise NetworkPolicyError("dns resolution failed") from exc
    if any(is_blocked_address(ip, allowlist) for ip in ips):
        raise NetworkPolicyError("target host resolves to a blocked address")
    return Target(url=parsed, host=host, ip=ips[0])


@dataclasses.dataclass(slots=True)
class Response:
    status_code: int
    headers: dict[str, str]
    url: str
    body: bytes


_SSL_CONTEXT: ssl.SSLContext | None = None


def _ssl_context() -> ssl.SSLContext:
    global _SSL_CONTEXT
    if _SSL_CONTEXT is None:
        import certifi

        _SSL_CONTEXT = ssl.create_default_context(cafile=certifi.where())
    return _SSL_CONTEXT


def _origin(url: httpx.URL) -> tuple[str, str, int | None]:
    return (url.scheme, url.host, url.port)


def send(
    method: str,
    url: str,
    *,
    headers: dict[str, str] | None = None,
    body: bytes = b"",
    timeout: float = DEFAULT_TIMEOUT,
    allowlist: Sequence[Network] = (),
    resolver: Resolver | None = None,
    max_response_bytes: int = MAX_RESPONSE_BODY_BYTES,
    max_redirects: int = MAX_REDIRECTS,
) -> Response:
    """Send one request through the guard. Raises NetworkPolicyError with a generic message."""
    if len(body) > MAX_REQUEST_BODY_BYTES:
        raise NetworkPolicyError("request body exceeds size limit")
    deadline = time.monotonic() + timeout
    headers = dict(headers or {})
    current = str(url)
    try:
        with httpx.Client(verify=_ssl_context(), trust_env=False, follow_redirects=False, timeout=timeout) as client:
            for hop in range(max_redirects + 1):
                target = check_target(current, allowlist, resolver)
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise NetworkPolicyError("http request timed out")
                pinned = target.url.copy_with(host=str(target.ip))
                req_headers = {k: v for k, v in headers.items() if k.lower() != "host"}
                req_headers["Host"] = target.url.netloc.decode("ascii")
                extensions: dict = {"timeout": httpx.Timeout(remaining).as_dict()}
                if target.url.scheme == "https":
                    extensions["sni_hostname"] = target.host
                request = client.build_request(method, pinned, headers=req_headers, content=body or None, extensions=extensions)
                response = client.send(request, stream=True)
                try:
                    location = response.headers.get("location")
                    if response.status_code in (301, 302, 303, 307, 308) and location:
                        if hop == max_redirects:
                            raise NetworkPolicyError("too many redirects")
                        nxt = target.url.join(location)
                        if response.status_code == 303 or (response.status_code in (301, 302) and method not in ("GET", "HEAD")):
                            method, body = ("GET" if method != "HEAD" else "HEAD"), b""
                            headers = {k: v for k, v in headers.items() if k.lower() not in ("content-type", "content-length")}
                        if _origin(nxt) != _origin(target.url):
                            headers = {k: v for k, v in headers.items() if k.lower() not in SENSITIVE_HEADERS}
                        current = str(nxt)
                        continue
                    chunks: list[bytes] = []
                    size = 0
                    for chunk in response.iter_bytes():
                        size += len(chunk)
                        if size > max_response_bytes:
                            raise NetworkPolicyError("response body exceeds size limit")
                        if time.monotonic() > deadline:
                            raise NetworkPolicyError("http request timed out")
                        chunks.append(chunk)
                    merged: dict[str, str] = {}
                    for key, value in response.headers.multi_items():
                        merged[key] = f"{merged[key]}, {value}" if key in merged else value
                    return Response(response.status_code, merged, str(target.url), b"".join(chunks))
                finally:
                    response.close()
    except NetworkPolicyError:
        raise
    except httpx.TimeoutException:
        raise NetworkPolicyError("http request timed out") from None
    except httpx.ConnectError:
        raise NetworkPolicyError("http connection error") from None
    except httpx.HTTPError as exc:
        raise NetworkPolicyError(f"http error: {type(exc).__name__}") from None
    except Exception as exc:  # noqa: BLE001 - never leak exception text to the model
        raise NetworkPolicyError(f"unexpected http_request failure: {type(exc).__name__}") from None
    raise NetworkPolicyError("too many redirects")


def describe_url(url: str) -> str:
    """URL without userinfo/query values, for logs."""
    parts = urllib.parse.urlsplit(url)
    return urllib.parse.urlunsplit((parts.scheme, parts.hostname or "", parts.path, "", ""))

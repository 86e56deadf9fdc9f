"""Network guard for agent traffic: ``http_request`` and the sandbox egress proxy (``proxy.py``).

Pure classification functions (no I/O) decide which addresses are reachable; ``EgressPolicy``
combines them with the pack allowlist (CIDR or CIDR:port) and the operator's private allowlist. ``send`` resolves a
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
from collections.abc import Callable, Iterable, Sequence

import httpx

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network
Resolver = Callable[[str, int], list[str]]
# Told of every hop of :func:`send`, redirects included: (url, the checked address or None when
# refused, the refusal code or "") — so rules on addresses see each hop (issue 23).
HopCallback = Callable[[str, "IPAddress | None", str], None]

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
    """A refusal or failure whose message is safe to show to the model (never exception text).

    ``reason`` is a short machine code for records (``not_allowlisted``, ``loopback``, ``metadata``,
    ``dns_failed``…); empty when the failure is not a policy decision.
    """

    def __init__(self, message: str, reason: str = "") -> None:
        super().__init__(message)
        self.reason = reason


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
        return _classify_ipv6(ip)
    return _classify_by_range(ip)


def _classify_ipv6(ip: ipaddress.IPv6Address) -> str | None:
    """IPv6 forms that embed an IPv4 address are judged by it; the rest by range."""
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
    return _classify_by_range(ip)


def _classify_by_range(ip: IPAddress) -> str | None:
    """The special-purpose range ``ip`` falls in (either version), or None when it is global."""
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


# ----------------------------------------------------------------------------- sandbox egress policy
# Cloud metadata endpoints: refused by name before any DNS lookup, and by address whatever an
# allowlist says (an operator's private allowlist included).
METADATA_HOSTS = frozenset(
    """metadata metadata.google.internal metadata.goog metadata.azure.internal metadata.azure.com
    metadata.oracle.internal metadata.tencentyun.com metadata.packet.net instance-data
    instance-data.ec2.internal""".split()
)
METADATA_NETWORKS: tuple[Network, ...] = tuple(
    ipaddress.ip_network(n) for n in ("169.254.169.254/32", "169.254.170.2/32", "100.100.100.200/32", "fd00:ec2::254/128")
)
# Classes no allowlist can open: 0.0.0.0/:: reach the host itself, multicast is never a peer.
ALWAYS_REFUSED = frozenset({"unspecified", "multicast"})


def _candidates(ip: IPAddress) -> list[IPAddress]:
    out: list[IPAddress] = [ip]
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        out.append(ip.ipv4_mapped)
    return out


def _parse_port(text: str) -> int:
    if not text.isdigit() or not 0 < int(text) < 65536:
        raise ValueError(f"invalid port: {text!r}")
    return int(text)


@dataclasses.dataclass(frozen=True, slots=True)
class AllowEntry:
    """One pack allowlist entry: a network and, optionally, the only port allowed on it."""

    network: Network
    port: int | None = None

    def covers(self, ip: IPAddress) -> bool:
        return any(c.version == self.network.version and c in self.network for c in _candidates(ip))

    def __str__(self) -> str:
        if self.port is None:
            return str(self.network)
        return f"[{self.network}]:{self.port}" if self.network.version == 6 else f"{self.network}:{self.port}"


def parse_allow_entry(text: str) -> AllowEntry:
    """``CIDR`` or ``CIDR:port``; IPv6 with a port is bracketed: ``[2001:db8::/32]:443``."""
    raw = str(text).strip()
    port: int | None = None
    if raw.startswith("["):
        inner, sep, rest = raw[1:].partition("]")
        if not sep or (rest and not rest.startswith(":")):
            raise ValueError(f"invalid allowlist entry: {text!r}")
        if rest:
            port = _parse_port(rest[1:])
        raw = inner
    elif raw.count(":") == 1:
        raw, _, port_text = raw.partition(":")
        port = _parse_port(port_text)
    return AllowEntry(ipaddress.ip_network(raw, strict=False), port)


@dataclasses.dataclass(frozen=True, slots=True)
class EgressPolicy:
    """The rule shared by ``http_request`` and the sandbox egress proxy.

    An address is reachable when it is not a metadata endpoint and:
    - it is public and (the pack allowlist is empty or an entry covers it, port included); or
    - it is loopback/private/link-local/CGNAT/… *and* an entry of the pack allowlist covers it
      *and* it lies inside the operator's ``private_allowlist`` (``SANDBOX_PRIVATE_ALLOWLIST``).
    """

    allowlist: tuple[AllowEntry, ...] = ()
    private_allowlist: tuple[Network, ...] = ()

    @classmethod
    def build(cls, allowlist: Iterable[str] = (), private_allowlist: Iterable[str] = ()) -> EgressPolicy:
        return cls(
            tuple(parse_allow_entry(e) for e in allowlist),
            tuple(ipaddress.ip_network(str(n).strip(), strict=False) for n in private_allowlist),
        )

    def _allowlist_refusal(self, ip: IPAddress, port: int) -> str | None:
        covering = [e for e in self.allowlist if e.covers(ip)]
        if not covering:
            return "not_allowlisted"
        if all(e.port is not None and e.port != port for e in covering):
            return "port_not_allowed"
        return None

    def refusal(self, address: str | IPAddress, port: int) -> str | None:
        """Why ``address:port`` is refused (a short code), or None when it may be reached."""
        ip = _as_ip(address)
        if any(c.version == n.version and c in n for c in _candidates(ip) for n in METADATA_NETWORKS):
            return "metadata"
        reason = classify_address(ip)
        if reason is not None:
            if reason in ALWAYS_REFUSED or not self.allowlist or not in_allowlist(ip, self.private_allowlist):
                return reason
            return self._allowlist_refusal(ip, port)
        return self._allowlist_refusal(ip, port) if self.allowlist else None


AnyAllowlist = Sequence[Network] | Sequence[str] | EgressPolicy


def _refusal(ip: IPAddress, port: int, allowlist: AnyAllowlist) -> str | None:
    if isinstance(allowlist, EgressPolicy):
        return allowlist.refusal(ip, port)
    # Legacy rule (operator-configured provider URLs): allowlisted CIDRs are exempt, nothing else.
    return (classify_address(ip) or "not_allowlisted") if is_blocked_address(ip, allowlist) else None


def host_key(host: str) -> str:
    return host.strip().rstrip(".").lower()


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


def resolve_destination(host: str, port: int, allowlist: AnyAllowlist, resolver: Resolver | None = None) -> IPAddress:
    """Resolve ``host`` once, refuse if ANY answer is refused, and return the address to connect to.

    Raises NetworkPolicyError whose ``reason`` names the refusal (for records).
    """
    if isinstance(allowlist, EgressPolicy) and host_key(host) in METADATA_HOSTS:
        raise NetworkPolicyError("target host is blocked by network policy", "metadata")
    literal = parse_ip_literal(host)
    if literal is not None:
        reason = _refusal(literal, port, allowlist)
        if reason is not None:
            raise NetworkPolicyError("target host is blocked by network policy", reason)
        return literal
    try:
        addresses = (resolver or system_resolver)(host, port)
    except Exception as exc:
        raise NetworkPolicyError("dns resolution failed", "dns_failed") from exc
    if not addresses:
        raise NetworkPolicyError("dns resolution failed", "dns_failed")
    ips: list[IPAddress] = []
    for addr in addresses:
        try:
            ips.append(_as_ip(addr))
        except ValueError as exc:
            raise NetworkPolicyError("dns resolution failed", "dns_failed") from exc
    for ip in ips:
        reason = _refusal(ip, port, allowlist)
        if reason is not None:
            raise NetworkPolicyError("target host resolves to a blocked address", reason)
    return ips[0]


def check_target(url: str | httpx.URL, allowlist: AnyAllowlist, resolver: Resolver | None = None) -> Target:
    """Check a URL. ``allowlist`` is an :class:`EgressPolicy` (agent traffic) or, for
    operator-configured URLs, a list of CIDRs that are exempt from the address check."""
    try:
        parsed = httpx.URL(str(url))
    except Exception as exc:
        raise NetworkPolicyError("invalid url", "bad_request") from exc
    if parsed.scheme not in ("http", "https"):
        raise NetworkPolicyError("unsupported URL scheme", "bad_request")
    host = parsed.host
    if not host:
        raise NetworkPolicyError("url host is required", "bad_request")
    if parsed.userinfo:
        raise NetworkPolicyError("credentials in the URL are not allowed; use headers", "bad_request")
    port = parsed.port or (443 if parsed.scheme == "https" else 80)
    return Target(url=parsed, host=host, ip=resolve_destination(host, port, allowlist, resolver))


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


_CONTENT_HEADERS = ("content-type", "content-length")


@dataclasses.dataclass(slots=True)
class _Outgoing:
    """What the next hop of :func:`send` sends; a redirect may change it (:func:`_follow_redirect`)."""

    method: str
    headers: dict[str, str]
    body: bytes
    secret_headers: Iterable[str]
    carries_secret: bool

    def drop_headers(self, names: Iterable[str]) -> None:
        """Drop the headers named (lower-case names), whatever their case."""
        dropped = set(names)
        self.headers = {k: v for k, v in self.headers.items() if k.lower() not in dropped}

    def switch_to_get(self) -> None:
        """A 303, or a 301/302 of anything but GET/HEAD: the next hop is a GET (HEAD stays HEAD) without a body."""
        self.method, self.body = ("GET" if self.method != "HEAD" else "HEAD"), b""
        self.drop_headers(_CONTENT_HEADERS)

    def strip_for_other_origin(self) -> None:
        """Another origin gets no credential header and no body: nothing of a secret goes past this hop."""
        self.drop_headers(SENSITIVE_HEADERS | {h.lower() for h in self.secret_headers})
        if self.body:
            self.body = b""
            self.drop_headers(_CONTENT_HEADERS)
        self.carries_secret, self.secret_headers = False, ()


def _pinned_request(client: httpx.Client, target: Target, outgoing: _Outgoing, deadline: float) -> httpx.Request:
    """The request to ``target``'s checked address; ``Host`` and TLS SNI keep the URL's name."""
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        raise NetworkPolicyError("http request timed out")
    pinned = target.url.copy_with(host=str(target.ip))
    req_headers = {k: v for k, v in outgoing.headers.items() if k.lower() != "host"}
    req_headers["Host"] = target.url.netloc.decode("ascii")
    extensions: dict[str, object] = {"timeout": httpx.Timeout(remaining).as_dict()}
    if target.url.scheme == "https":
        extensions["sni_hostname"] = target.host
    return client.build_request(outgoing.method, pinned, headers=req_headers, content=outgoing.body or None, extensions=extensions)


def _follow_redirect(url: httpx.URL, status: int, location: str, outgoing: _Outgoing) -> str:
    """Where a redirect from ``url`` leads, with ``outgoing`` adapted to it; refuses a 307/308 to
    another origin that would re-send a body or a secret."""
    nxt = url.join(location)
    cross_origin = _origin(nxt) != _origin(url)
    if cross_origin and outgoing.carries_secret:
        # Whatever the status: the secret may sit in the URL (a query the redirect keeps), where
        # dropping headers and body does not reach it (issue 23).
        raise NetworkPolicyError(f"refused a {status} redirect to another origin: the request carried a secret", "redirect_refused")
    if cross_origin and status in (307, 308) and outgoing.body:
        raise NetworkPolicyError(f"refused a {status} redirect to another origin: it would re-send a request body", "redirect_refused")
    if status == 303 or (status in (301, 302) and outgoing.method not in ("GET", "HEAD")):
        outgoing.switch_to_get()
    if cross_origin:
        outgoing.strip_for_other_origin()
    return str(nxt)


def _read_body(response: httpx.Response, max_response_bytes: int, deadline: float) -> bytes:
    """The response body, refused past ``max_response_bytes`` or the deadline."""
    chunks: list[bytes] = []
    size = 0
    for chunk in response.iter_bytes():
        size += len(chunk)
        if size > max_response_bytes:
            raise NetworkPolicyError("response body exceeds size limit")
        if time.monotonic() > deadline:
            raise NetworkPolicyError("http request timed out")
        chunks.append(chunk)
    return b"".join(chunks)


def _merged_headers(response: httpx.Response) -> dict[str, str]:
    """One value per header name; repeated headers joined with ``, ``."""
    merged: dict[str, str] = {}
    for key, value in response.headers.multi_items():
        merged[key] = f"{merged[key]}, {value}" if key in merged else value
    return merged


def _checked_hop(url: str, allowlist: AnyAllowlist, resolver: Resolver | None, on_hop: HopCallback | None) -> Target:
    """``check_target`` for one hop, reported to ``on_hop`` (allowed or refused)."""
    try:
        target = check_target(url, allowlist, resolver)
    except NetworkPolicyError as exc:
        if on_hop is not None and exc.reason != "bad_request":
            on_hop(url, None, exc.reason or "refused")
        raise
    if on_hop is not None:
        on_hop(url, target.ip, "")
    return target


def send(
    method: str,
    url: str,
    *,
    headers: dict[str, str] | None = None,
    body: bytes = b"",
    timeout: float = DEFAULT_TIMEOUT,
    allowlist: AnyAllowlist = (),
    resolver: Resolver | None = None,
    max_response_bytes: int = MAX_RESPONSE_BODY_BYTES,
    max_redirects: int = MAX_REDIRECTS,
    secret_headers: Iterable[str] = (),
    carries_secret: bool = False,
    on_hop: HopCallback | None = None,
) -> Response:
    """Send one request through the guard. Raises NetworkPolicyError with a generic message.

    A redirect to another origin drops the credential headers (``SENSITIVE_HEADERS`` plus
    ``secret_headers``, the ones a workspace secret was substituted into) and never re-sends a
    body; a 307/308 to another origin, which would have to re-send it, is refused when the request
    has a body, and a request that ``carries_secret`` (URL included) follows no redirect to
    another origin at all (docs/secrets.md).
    """
    if len(body) > MAX_REQUEST_BODY_BYTES:
        raise NetworkPolicyError("request body exceeds size limit")
    deadline = time.monotonic() + timeout
    outgoing = _Outgoing(method, dict(headers or {}), body, secret_headers, carries_secret)
    current = str(url)
    try:
        with httpx.Client(verify=_ssl_context(), trust_env=False, follow_redirects=False, timeout=timeout) as client:
            for hop in range(max_redirects + 1):
                target = _checked_hop(current, allowlist, resolver, on_hop)
                response = client.send(_pinned_request(client, target, outgoing, deadline), stream=True)
                try:
                    location = response.headers.get("location")
                    if response.status_code in (301, 302, 303, 307, 308) and location:
                        if hop == max_redirects:
                            raise NetworkPolicyError("too many redirects")
                        current = _follow_redirect(target.url, response.status_code, location, outgoing)
                        continue
                    content = _read_body(response, max_response_bytes, deadline)
                    return Response(response.status_code, _merged_headers(response), str(target.url), content)
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

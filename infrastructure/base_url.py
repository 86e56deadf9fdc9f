"""Provider account ``base_url`` rules (spec runtime.md §7.4), as pure functions plus one resolver.

``base_url_shape_error`` and ``address_block_reason`` do no I/O, so tests classify any URL or
address without connecting anywhere. ``base_url_check`` adds the DNS answer: every address must
be public, and the caller pins its connection to exactly those addresses. Messages never echo
resolved addresses.

``ALLOW_PRIVATE_PROVIDER_URLS`` (an operator setting, for self-hosted models on localhost or a
LAN) lifts the https, hostname and address rules; userinfo, query and fragment stay forbidden.
"""

from __future__ import annotations

import ipaddress
import socket
import urllib.parse
from collections.abc import Callable

from core.errors import DomainError
from engine.net.guard import parse_ip_literal

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
Resolver = Callable[[str, int], list[str]]

SPECIAL_HOSTNAMES = frozenset({"localhost", "metadata", "instance-data", "metadata.google.internal"})
SPECIAL_SUFFIXES = (".localhost", ".local", ".internal", ".home.arpa", ".test", ".invalid", ".example")
GLOBAL_UNICAST_V6 = ipaddress.ip_network("2000::/3")
BLOCKED_NETWORKS = tuple(
    ipaddress.ip_network(cidr)
    for cidr in (
        "0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16", "172.16.0.0/12",
        "192.0.0.0/24", "192.0.2.0/24", "192.31.196.0/24", "192.52.193.0/24", "192.88.99.0/24",
        "192.168.0.0/16", "192.175.48.0/24", "198.18.0.0/15", "198.51.100.0/24", "203.0.113.0/24",
        "224.0.0.0/4", "240.0.0.0/4",
        "::/96", "64:ff9b::/96", "64:ff9b:1::/48", "100::/64", "2001::/23", "2001:db8::/32", "2002::/16",
        "2620:4f:8000::/48", "3fff::/20", "5f00::/16", "fc00::/7", "fe80::/10", "ff00::/8",
    )
)  # fmt: skip


class BaseUrlError(DomainError):
    """A base URL that may not be used; the message is safe to show (no resolved addresses).
    Callers that know the field (``base_url``, ``endpoint_url``) raise it again with that field."""

    default_code = "invalid_url"


def address_block_reason(address: str | IPAddress) -> str | None:
    """Why an address may not be a provider endpoint, or None when it is public global unicast."""
    ip = (
        address
        if isinstance(address, ipaddress.IPv4Address | ipaddress.IPv6Address)
        else ipaddress.ip_address(str(address).split("%", 1)[0])
    )
    for net in BLOCKED_NETWORKS:
        if ip.version == net.version and ip in net:
            return "a special-purpose address range"
    if isinstance(ip, ipaddress.IPv6Address) and ip not in GLOBAL_UNICAST_V6:
        return "not a global unicast address"
    return None


def _hostname_error(host: str) -> str | None:
    name = host.rstrip(".").lower()
    if name in SPECIAL_HOSTNAMES or any(name.endswith(suffix) for suffix in SPECIAL_SUFFIXES):
        return f"The host “{name}” is a local or special-use name; use the provider's public address."
    return None


def _split(url: str) -> urllib.parse.SplitResult:
    try:
        parts = urllib.parse.urlsplit(url.strip())
        parts.port  # noqa: B018 - raises ValueError for a bad port
    except ValueError:
        raise BaseUrlError("Enter a valid absolute URL, for example https://api.example.com/v1.") from None
    return parts


def base_url_shape_error(url: str, *, allow_private: bool = False) -> str | None:
    """Everything about the URL that needs no DNS. None when it passes."""
    try:
        parts = _split(url)
    except BaseUrlError as exc:
        return str(exc)
    allowed_schemes = ("https", "http") if allow_private else ("https",)
    if parts.scheme not in allowed_schemes or not parts.netloc:
        return "Use an absolute https:// URL, for example https://api.example.com/v1."
    if parts.username is not None or parts.password is not None or "@" in parts.netloc:
        return "Put credentials in the account's credential, not in the URL."
    if parts.query or url.strip().endswith("?"):
        return "Remove the query string (“?…”) from the base URL."
    if parts.fragment or "#" in url:
        return "Remove the fragment (“#…”) from the base URL."
    host = parts.hostname or ""
    if not host:
        return "The URL needs a host name."
    if "%" in host or "%25" in parts.netloc:
        return "IPv6 zone identifiers are not allowed in the base URL."
    if allow_private:
        return None
    if error := _hostname_error(host):
        return error
    literal = parse_ip_literal(host)
    if literal is not None and address_block_reason(literal):
        return "The address is private, local or reserved; use the provider's public address."
    return None


def system_resolver(host: str, port: int) -> list[str]:
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]).split("%", 1)[0] for info in infos))


def base_url_check(url: str, *, allow_private: bool = False, resolver: Resolver | None = None) -> list[IPAddress]:
    """Validate the URL and its whole DNS answer; return the addresses a connection may use.

    With ``allow_private`` no address is checked and an empty list means "any".
    """
    if error := base_url_shape_error(url, allow_private=allow_private):
        raise BaseUrlError(error)
    if allow_private:
        return []
    parts = _split(url)
    host = parts.hostname or ""
    literal = parse_ip_literal(host)
    if literal is not None:
        return [literal]
    try:
        answers = (resolver or system_resolver)(host, parts.port or 443)
    except (OSError, UnicodeError):
        raise BaseUrlError(f"The host “{host}” could not be resolved.") from None
    if not answers:
        raise BaseUrlError(f"The host “{host}” could not be resolved.")
    addresses: list[IPAddress] = []
    for answer in answers:
        try:
            ip = ipaddress.ip_address(str(answer).split("%", 1)[0])
        except ValueError:
            raise BaseUrlError(f"The host “{host}” could not be resolved.") from None
        if address_block_reason(ip):
            raise BaseUrlError(f"The host “{host}” resolves to a private, local or reserved address; use the provider's public address.")
        addresses.append(ip)
    return addresses

"""Where a workspace secret may be sent: host globs with an optional port (docs/secrets.md).

One implementation for both sides: ``secrets_app`` validates and stores the canonical form an
admin entered, and ``http_request`` matches a request's destination against it.

Pattern rules:
- ``api.example.com`` — exactly that host; ``*.example.org`` — any host below ``example.org``
  (one or more labels; not ``example.org`` itself); an IP literal (``10.1.2.3``, ``[2001:db8::1]``).
- ``:port`` limits the pattern to that port (``http`` or ``https``); without a port, any port of
  that host matches over ``https`` only: a plain-HTTP binding names its port (``host:80``).
- No scheme, path, query, user name or bare ``*``; ``*`` only as the whole first label, and a
  wildcard needs at least two labels after it (``*.com`` is refused).
- Host names are IDNA-encoded (``bücher.de`` → ``xn--bcher-kva.de``) and lower-cased; a trailing
  dot is dropped. The canonical form is what is stored, shown and compared.
"""

from __future__ import annotations

import dataclasses
import ipaddress
import re
from collections.abc import Iterable

import httpx
import idna

MAX_PATTERNS = 50
MAX_PATTERN_LENGTH = 260
_LABEL = re.compile(r"^[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?$")


class HostPatternError(ValueError):
    """The message says what is wrong with the pattern, for the person who typed it."""


@dataclasses.dataclass(frozen=True, slots=True)
class HostPattern:
    host: str  # ASCII, lower case; for a wildcard, the part after "*."; IPv6 without brackets
    port: int | None = None
    wildcard: bool = False

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return ("*." if self.wildcard else "") + host + (f":{self.port}" if self.port is not None else "")

    def matches(self, host: str, port: int, scheme: str = "https") -> bool:
        """``host``: ASCII and lower case, an IP literal in ``ipaddress`` form (see :func:`destination`).

        A pattern without a port is HTTPS only (any port): a secret never crosses the network in
        clear text unless the admin named the port, which is how a plain-HTTP binding is declared
        (``api.internal:80``, ``10.0.0.5:8080``)."""
        if self.port is None and scheme != "https":
            return False
        if self.port is not None and self.port != port:
            return False
        if self.wildcard:
            return host.endswith("." + self.host) and _ip(host) is None
        return host == self.host


def _ascii_host(text: str) -> str:
    text = text.rstrip(".")
    if not text:
        raise HostPatternError("Enter a host name, for example api.example.com.")
    if text.isascii():
        host = text.lower()
    else:
        try:
            host = idna.encode(text, uts46=True).decode("ascii")
        except idna.IDNAError:
            raise HostPatternError(f"{text!r} is not a valid host name.") from None
    labels = host.split(".")
    if len(host) > 253 or not all(_LABEL.match(label) for label in labels):
        raise HostPatternError(f"{text!r} is not a valid host name (letters, digits, hyphens and dots).")
    if labels[-1].isdigit():  # "10.1.2", "0.0.1": neither a name nor an IP address
        raise HostPatternError(f"{text!r} is neither a host name nor an IP address.")
    return host


def _ip(text: str) -> str | None:
    try:
        return str(ipaddress.ip_address(text))
    except ValueError:
        return None


def parse(text: str) -> HostPattern:
    """Parse one pattern; raises :class:`HostPatternError` with a message for the admin."""
    raw = str(text).strip()
    _check_shape(raw)
    host, port_text = _split_port(raw)
    port = _port(raw, port_text)
    wildcard, host = _split_wildcard(raw, host)
    literal = _ip(host)
    if literal is not None:
        if wildcard:
            raise HostPatternError(f"{raw!r}: a wildcard cannot be combined with an IP address.")
        return HostPattern(literal, port)
    ascii_host = _ascii_host(host)
    if wildcard and ascii_host.count(".") < 1:
        raise HostPatternError(f"{raw!r} is too broad: a wildcard needs at least two labels after it (*.example.com).")
    return HostPattern(ascii_host, port, wildcard)


def _check_shape(raw: str) -> None:
    """Refuse what is not a host with an optional port: empty, too long, a URL, a path, a user name."""
    if not raw:
        raise HostPatternError("Enter a host, for example api.example.com.")
    if len(raw) > MAX_PATTERN_LENGTH:
        raise HostPatternError(f"A host is at most {MAX_PATTERN_LENGTH} characters.")
    if "://" in raw:
        raise HostPatternError(f"{raw!r}: leave out the scheme (https://); enter the host only, e.g. api.example.com.")
    if any(c in raw for c in "/?#@\\") or any(c.isspace() for c in raw):
        raise HostPatternError(f"{raw!r}: enter a host and optional port only, without a path, query or user name.")


def _split_port(raw: str) -> tuple[str, str]:
    """``(host, port text)``; a bracketed host must be an IPv6 address, a bare one with several
    colons is one too (and has no port)."""
    if raw.startswith("["):
        inner, sep, rest = raw[1:].partition("]")
        if not sep or (rest and not rest.startswith(":")) or _ip(inner) is None or ":" not in inner:
            raise HostPatternError(f"{raw!r}: write an IPv6 address as [2001:db8::1] or [2001:db8::1]:443.")
        if rest and not rest[1:]:
            raise HostPatternError(f"{raw!r}: the port is missing after ':'.")
        return inner, rest[1:]
    if raw.count(":") == 1:
        host, _, port_text = raw.partition(":")
        if not port_text:
            raise HostPatternError(f"{raw!r}: the port is missing after ':'.")
        return host, port_text
    if raw.count(":") > 1 and _ip(raw) is None:
        raise HostPatternError(f"{raw!r} is not a valid host.")
    return raw, ""


def _port(raw: str, port_text: str) -> int | None:
    if not port_text:
        return None
    if not port_text.isdigit() or not 0 < int(port_text) < 65536:
        raise HostPatternError(f"{raw!r}: the port must be a number from 1 to 65535.")
    return int(port_text)


def _split_wildcard(raw: str, host: str) -> tuple[bool, str]:
    """``(True, the host after "*.")`` for a wildcard, else ``(False, host)``; ``*`` anywhere else is refused."""
    if host == "*" or (host.startswith("*") and not host.startswith("*.")):
        raise HostPatternError(f"{raw!r}: a bare * would allow every host; use *.example.com for the hosts below a domain.")
    wildcard = host.startswith("*.")
    if wildcard:
        host = host[2:]
    if "*" in host:
        raise HostPatternError(f"{raw!r}: * may only be the whole first label, as in *.example.com.")
    return wildcard, host


def normalise(patterns: Iterable[str]) -> list[str]:
    """Canonical, de-duplicated patterns in the order given; raises HostPatternError for the first bad one."""
    out: list[str] = []
    for text in patterns:
        canonical = str(parse(text))
        if canonical not in out:
            out.append(canonical)
    if len(out) > MAX_PATTERNS:
        raise HostPatternError(f"At most {MAX_PATTERNS} hosts per secret.")
    return out


def destination(url: str | httpx.URL) -> tuple[str, int] | None:
    """``(host, port)`` of a URL as patterns see it (ASCII, lower case, effective port), or None."""
    found = _destination(url)
    return (found[0], found[1]) if found is not None else None


def _destination(url: str | httpx.URL) -> tuple[str, int, str] | None:
    """``(host, port, scheme)`` of a URL as patterns see it, or None."""
    try:
        parsed = url if isinstance(url, httpx.URL) else httpx.URL(str(url))
        host = parsed.raw_host.decode("ascii").rstrip(".").lower()
    except Exception:  # noqa: BLE001 - any unparsable URL simply matches nothing
        return None
    if not host or parsed.scheme not in ("http", "https"):
        return None
    literal = _ip(host.strip("[]"))
    port = parsed.port or (443 if parsed.scheme == "https" else 80)
    return (literal if literal is not None else host), port, parsed.scheme


def allowed(patterns: Iterable[str], url: str | httpx.URL) -> bool:
    """True when the URL's destination matches one of the (canonical) patterns."""
    dest = _destination(url)
    if dest is None:
        return False
    host, port, scheme = dest
    for text in patterns:
        try:
            pattern = parse(text)
        except HostPatternError:
            continue
        if pattern.matches(host, port, scheme):
            return True
    return False

"""Remove secret values from anything that leaves the engine (tool results, events, errors)."""

from __future__ import annotations

import base64
import binascii
import re
import urllib.parse
from collections.abc import Iterable
from typing import Any

REDACTED = "[redacted]"
_B64_TOKEN = re.compile(r"[A-Za-z0-9+/_-]{8,}={0,2}")


class Redactor:
    """Replace every occurrence of any secret value (and its common encodings) with ``[redacted]``.

    Forms covered: the raw value, URL-encoded (``quote``/``quote_plus``), base64 of the value,
    and any base64 token that decodes to text containing a value (``Basic`` auth of
    ``user:value``). Longest values are replaced first so a secret that contains another is
    not left half-visible.
    """

    def __init__(self, secret_values: Iterable[str]):
        values = {v for v in secret_values if isinstance(v, str) and v}
        forms: set[str] = set()
        for value in values:
            forms.add(value)
            forms.add(urllib.parse.quote(value, safe=""))
            forms.add(urllib.parse.quote_plus(value, safe=""))
            encoded = base64.b64encode(value.encode()).decode()
            if len(value) >= 4:
                forms.add(encoded)
                forms.add(encoded.rstrip("="))
        self._values = sorted(values, key=len, reverse=True)
        # base64 of any text that contains a value (e.g. Basic "user:value") contains one of
        # three alignment-dependent "cores" of the value's own encoding: a cheap substring test
        # tells us when it is worth decoding tokens.
        cores: set[str] = set()
        for value in values:
            raw = value.encode()
            for offset in range(3):
                enc = base64.b64encode(b"\0" * offset + raw).decode()
                core = enc[4 if offset else 0 : -4]
                if len(core) >= 6:
                    cores.add(core)
                elif len(value) >= 4:
                    cores.add("")  # too short to fingerprint: always scan tokens
        self._cores = tuple(cores)
        self._forms = tuple(sorted((f for f in forms if f), key=len, reverse=True))
        ordered = self._forms
        self._pattern = re.compile("|".join(re.escape(f) for f in ordered)) if ordered else None
        self._bytes_values = [v.encode() for v in self._values]

    def __bool__(self) -> bool:
        return self._pattern is not None

    def _b64_contains_secret(self, token: str) -> bool:
        raw = token.replace("-", "+").replace("_", "/")
        raw += "=" * (-len(raw) % 4)
        try:
            decoded = base64.b64decode(raw, validate=True)
        except (binascii.Error, ValueError):
            return False
        return any(v in decoded for v in self._bytes_values)

    def _replace_spans(self, s: str) -> str:
        # Collect every occurrence of every form and merge overlapping spans before replacing:
        # a single leftmost-match pass would leave the tail of a second value that overlaps
        # the first ("secretABC" + "ABCsecret2" in "secretABCsecret2") visible.
        spans: list[tuple[int, int]] = []
        for form in self._forms:
            start = s.find(form)
            while start != -1:
                spans.append((start, start + len(form)))
                start = s.find(form, start + 1)
        spans.sort()
        out: list[str] = []
        pos = 0
        end = -1
        for a, b in spans:
            if a <= end:
                end = max(end, b)
                continue
            if end >= 0:
                out.append(REDACTED)
                pos = end
            out.append(s[pos:a])
            end = b
        out.append(REDACTED)
        out.append(s[end:])
        return "".join(out)

    def text(self, s: str) -> str:
        if self._pattern is None or not s:
            return s
        if any(f in s for f in self._forms):
            s = self._replace_spans(s)
        if not any(c in s for c in self._cores):
            return s
        return _B64_TOKEN.sub(lambda m: REDACTED if self._b64_contains_secret(m.group(0)) else m.group(0), s)

    def json(self, obj: Any) -> Any:
        if self._pattern is None:
            return obj
        if isinstance(obj, str):
            return self.text(obj)
        if isinstance(obj, dict):
            return {self.text(k) if isinstance(k, str) else k: self.json(v) for k, v in obj.items()}
        if isinstance(obj, (list, tuple)):
            return [self.json(v) for v in obj]
        return obj

"""Remove secret values from anything that leaves the engine (tool results, events, errors).

Two passes over every string, then an event-stream pass (docs/secrets.md, "Redaction"):

1. **Exact forms**, replaced where they occur: the raw value, URL-encoded (``quote`` /
   ``quote_plus``), base64 of the value's UTF-8 or UTF-16 bytes, and any base64 token that decodes
   to bytes containing the value (``Basic`` auth of ``user:value``).
2. **Folded view.** The text is *folded*: ``\\uXXXX``, ``\\xXX`` and ``%XX`` escapes decoded,
   case-folded, and every ASCII character that is not a letter or digit dropped, as are NUL and
   common Unicode spaces and dashes. A value, folded the same way, is then found whatever its
   case (``SeCrEt``), escaping (JSON ``\\u0073``, URL ``%73``) or spacing (``s e c r e t``,
   ``s-e-c-r-e-t``, UTF-16 read as text). The same view finds the value reversed, rot13'd, in hex
   (of its UTF-8 bytes, lower or upper case, ``\\x``-escaped or spaced) and in base32
   (alone or inside a longer base32 text, at any byte alignment). A match is mapped back to the
   characters it came from, and those are replaced. Derived forms need a value of at least
   ``MIN_DERIVED`` letters/digits, so short values do not mask ordinary words.
3. **Across events** (:class:`StreamRedactor`, used by the run event sink): a value split over
   the same field of consecutive events of one case attempt (``text_delta`` of two deltas, the
   ``result.content`` of two tool calls…). Stored events cannot be rewritten, so masking is
   decided as each event arrives: a field that *ends* with the first ``MIN_DERIVED`` or more
   folded characters of a value has that fragment masked at once, because the next event may
   complete it; a field whose start completes a value begun in the previous event's same field
   has its part masked. A fragment shorter than ``MIN_DERIVED`` at the end of an event stays
   visible (a value leaked that way loses at most that many characters).
"""

from __future__ import annotations

import base64
import binascii
import bisect
import functools
import itertools
import json
import re
import urllib.parse
from collections.abc import Iterable
from typing import Any

import re2

from engine.unfold import DEEP_TRIGGER, STRIDES, FastPattern, char_view, decoded_tokens, strides, xor_profile

REDACTED = "[redacted]"
MIN_DERIVED = 6
_B64_TOKEN = re.compile(r"[A-Za-z0-9+/_-]{8,}={0,2}")
_ESCAPE = re.compile(r"\\u([0-9a-fA-F]{4})|\\x([0-9a-fA-F]{2})|%([0-9a-fA-F]{2})")
_BASE32_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz234567=")
# Dropped from the folded view: ASCII that is not a letter or digit, NUL, and the Unicode
# spaces, joiners and dashes someone would use to space a value out.
_DROPPED = frozenset(
    [chr(i) for i in range(128) if not chr(i).isalnum()]
    + list("\u00a0\u00ad\u1680\u180e\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u200b\u200c\u200d")
    + list("\u2010\u2011\u2012\u2013\u2014\u2015\u2028\u2029\u202f\u205f\u2060\u2212\u3000\ufeff")
)
_DROP_TABLE = {ord(c): None for c in _DROPPED}
_DROP_RE = re.compile("[" + re.escape("".join(sorted(_DROPPED))) + "]+")  # twice translate's speed on non-ASCII
_ASCII_DROPPED = bytes(i for i in range(128) if chr(i) in _DROPPED)
_LETTERS = "abcdefghijklmnopqrstuvwxyz"
_ROT13 = str.maketrans(_LETTERS, _LETTERS[13:] + _LETTERS[:13])
# A piece of a value counts on its own from this many folded characters, mixing letters and
# digits: 8 characters of a random alphanumeric part are ~41 bits, which ordinary text does not
# hold by chance; an all-letter piece may be a word ("password"), so pieces must mix.
PARTIAL_MIN = 8
_STREAM_KEYS = 512  # fields tracked per stream (payload shapes are small; raw provider JSON is not)
_STREAM_NEEDLE_MAX = 8192  # longer forms are not followed across events (tails stay small)
_RE2_FROM = 256
_REST_MIN = 4  # the rest of a split value is followed from this many folded characters (shorter ones are everywhere)
# What text() and detect() made of short strings: an event's keys and small values repeat event
# after event (``case_key``, a date, a tool name), and a redactor's values never change. One memory
# per process, shared by the redactors of the same values (a run's cases), bounded for all together.
_MEMO_CHARS = 512  # strings this short are remembered
_MEMO_SIZE = 8192  # remembered strings per process and kind (then forgotten all at once): ~10 MB at most
_MEMO_IDS = itertools.count()
_MASKED: dict[tuple[int, str], str] = {}  # (a set of values, a string) → text() of it
_DETECTED: dict[tuple[int, str], str] = {}  # (a set of values, a string) → detect() of it
_PATH_MAX = 256  # field paths are cut here (keys are agent-controlled; a cut only merges two streams)


def _unescape(match: re.Match[str]) -> str:
    return chr(int(match.group(1) or match.group(2) or match.group(3), 16))


def fold(text: str) -> str:
    """The folded view of ``text`` (see the module docstring)."""
    if "\\" in text or "%" in text:
        text = _ESCAPE.sub(_unescape, text)
    if text.isascii():  # the common case, at bytes.translate speed (a dict table is ~20x slower)
        return text.lower().encode().translate(None, _ASCII_DROPPED).decode()
    return _DROP_RE.sub("", text.casefold())


def _fold_map(text: str) -> list[tuple[int, int]]:
    """For each character of ``fold(text)``, the span of ``text`` it came from."""
    spans: list[tuple[int, int]] = []
    i, n = 0, len(text)
    escapes = "\\" in text or "%" in text
    while i < n:
        char, end = text[i], i + 1
        if escapes and char in "\\%":
            match = _ESCAPE.match(text, i)
            if match is not None:
                char, end = _unescape(match), match.end()
        for folded in char.casefold():
            if folded not in _DROPPED:
                spans.append((i, end))
        i = end
    return spans


class _FoldIndex:
    """Maps positions of ``fold(text)`` back to ``text``, building the exact map only where asked.

    The text is cut into ~512-character chunks at points no escape spans, so each chunk folds on
    its own; a lookup folds every chunk once (C speed) and maps one chunk character by character.
    """

    def __init__(self, text: str) -> None:
        self.text = text
        self.cuts = [0]
        self.starts = [0]
        pos, total, n = 0, 0, len(text)
        while pos < n:
            cut = min(pos + 512, n)
            while cut < n and ("\\" in text[cut - 5 : cut] or "%" in text[cut - 5 : cut]):
                cut += 1
            total += len(fold(text[pos:cut]))
            pos = cut
            self.cuts.append(pos)
            self.starts.append(total)
        self._maps: dict[int, list[tuple[int, int]]] = {}

    def span(self, index: int) -> tuple[int, int]:
        """The span of ``text`` that folded character ``index`` came from."""
        chunk = bisect.bisect_right(self.starts, index) - 1
        spans = self._maps.get(chunk)
        if spans is None:
            spans = self._maps[chunk] = _fold_map(self.text[self.cuts[chunk] : self.cuts[chunk + 1]])
        a, b = spans[index - self.starts[chunk]]
        return a + self.cuts[chunk], b + self.cuts[chunk]


def _remember(memo: dict[tuple[int, str], str], key: tuple[int, str], value: str) -> str:
    if len(memo) >= _MEMO_SIZE:
        memo.clear()  # bounded: at most _MEMO_SIZE strings of _MEMO_CHARS characters
    memo[key] = value
    return value


def merge_spans(spans: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    """Overlapping or touching ``(start, end)`` spans, merged and sorted."""
    merged: list[tuple[int, int]] = []
    for a, b in sorted(spans):
        if merged and a <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], b))
        else:
            merged.append((a, b))
    return merged


def _replace(text: str, spans: list[tuple[int, int]]) -> str:
    out: list[str] = []
    pos = 0
    for a, b in merge_spans(spans):
        out.append(text[pos:a])
        out.append(REDACTED)
        pos = b
    out.append(text[pos:])
    return "".join(out)


def _base32_cores(raw: bytes) -> list[str]:
    """The folded base32 characters that only ``raw`` determines, at each of the 5 byte alignments."""
    cores = []
    for offset in range(5):
        encoded = base64.b32encode(b"\0" * offset + raw).decode()
        core = encoded[-(-8 * offset // 5) : 8 * (offset + len(raw)) // 5]
        if len(core) >= 8:
            cores.append(core.casefold())
    return cores


@functools.lru_cache(maxsize=256)
def _alternation(needles: tuple[str, ...]) -> Any:  # an re2 pattern (re2 ships no types), None without needles
    literals = [re.escape(n) for n in needles]
    if not literals:
        return None
    options = re2.Options()
    options.log_errors = False
    options.max_mem = 64 << 20
    try:
        return re2.compile("|".join(literals), options)
    except re2.error:  # an escape RE2 does not take: the caller searches each needle instead
        return None


def _rot(text: str, n: int) -> str:
    return text.translate(str.maketrans(_LETTERS, _LETTERS[n:] + _LETTERS[:n]))


@functools.lru_cache(maxsize=4096)
def _grams(needle: str) -> frozenset[str]:
    return frozenset(needle[i : i + MIN_DERIVED] for i in range(len(needle) - MIN_DERIVED + 1))


def _secret_part(value: str) -> str:
    """The folded value from its first piece holding a digit (``agentclash-canary-db-Q5R4S3T2`` →
    ``q5r4s3t2``): the words before it are a label anyone may repeat; the value itself when no
    piece has a digit."""
    pieces = [p for p in re.split(r"[^0-9A-Za-z]+", value) if p]
    for i, piece in enumerate(pieces):
        if any(c.isdigit() for c in piece):
            return fold("".join(pieces[i:]))
    return fold(value)


def _secret_tail(value: str) -> str:
    """The value from its first piece holding a digit, as written (:func:`_secret_part` unfolded)."""
    match = re.search(r"[0-9A-Za-z]*\d", value)
    return value[match.start() :] if match else value


def _mixed(piece: str) -> bool:
    return any(c.isdigit() for c in piece) and any(c.isalpha() for c in piece)


@functools.lru_cache(maxsize=1024)  # a run's values are the same for every case and event stream
def derived_needles(value: str) -> tuple[tuple[str, str], ...]:
    """The folded needles of a value and the form each finds: the value, reversed, ROT-1…25, hex
    (of the bytes, reversed, of the reversed bytes) and its partial pieces (the part from its
    first digit-holding piece, and every ``PARTIAL_MIN``-character window of it that mixes
    letters and digits)."""
    folded, raw = fold(value), value.encode()
    needles = {folded: "spaced", folded[::-1]: "reversed"}
    for n in range(1, 26):
        needles.setdefault(_rot(folded, n), "rot13" if n == 13 else f"rot{n}")
    for hexed in (raw.hex(), raw.hex()[::-1], raw[::-1].hex()):
        needles.setdefault(hexed, "hex")
    part = _secret_part(value)
    if part != folded and len(part) >= PARTIAL_MIN and _mixed(part):
        needles.setdefault(part, "partial")
    if len(part) > PARTIAL_MIN:
        for i in range(len(part) - PARTIAL_MIN + 1):
            window = part[i : i + PARTIAL_MIN]
            if _mixed(window):
                needles.setdefault(window, "partial")
    return tuple(needles.items())


_BUILT: dict[frozenset[str], dict[str, Any]] = {}
_BUILT_MAX = 256


class Redactor:
    """Replace every occurrence of any secret value (and its common encodings) with ``[redacted]``."""

    _memo_id: int  # its set of values in the memory of short strings (_MASKED, _DETECTED)

    def __init__(self, secret_values: Iterable[str]):
        values = frozenset(v for v in secret_values if isinstance(v, str) and v)
        # Building the needles of four values takes ~4 ms; a run builds one redactor per case
        # with the same values, and nothing changes a redactor once built: reuse its fields.
        built = _BUILT.get(values)
        if built is None:
            self._build(values)
            self._memo_id = next(_MEMO_IDS)  # this set of values in the shared memory of short strings
            if len(_BUILT) >= _BUILT_MAX:
                _BUILT.pop(next(iter(_BUILT)), None)
            _BUILT[values] = dict(self.__dict__)
        else:
            self.__dict__.update(built)

    def _build(self, values: frozenset[str]) -> None:
        forms: set[str] = set()
        for value in values:
            forms.add(value)
            forms.add(urllib.parse.quote(value, safe=""))
            forms.add(urllib.parse.quote_plus(value, safe=""))
            if len(value) >= 4:
                for raw in (value.encode(), value.encode("utf-16-le")):
                    encoded = base64.b64encode(raw).decode()
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
        self._cores = tuple(sorted(cores))  # "" first: when present, every text is scanned
        self._forms = tuple(sorted((f for f in forms if f), key=len, reverse=True))
        self._min_form = min((len(f) for f in self._forms), default=0)
        # One RE2 pass for every exact form and base64 core at once, before a long text is searched
        # for each (a 64 KiB body: ~0.1 ms instead of ~0.2 ms of ``in`` scans); None: search each.
        self._cores_gated = "" not in self._cores
        self._exact_gate = _alternation(self._forms + (self._cores if self._cores_gated else ()))
        # UTF-16 too: a base64 token that decodes to the value in UTF-16 is caught when scanned.
        self._bytes_values = [v.encode() for v in self._values] + [v.encode("utf-16-le") for v in self._values if len(v) >= 4]
        # Folded needles (pass 2). ``stream`` ones are also matched across events (no base32:
        # its alignment depends on what precedes the value).
        needles: dict[str, bool] = {}  # needle -> expand the match to the whole base32 token
        stream: set[str] = set()
        self.labels: dict[str, str] = {}  # needle -> the form it finds (a finding's ``encoding``)
        self._plain: set[str] = set()  # needles a stride or a decoded layer is searched for
        self._byte_needles: list[tuple[bytes, str]] = []
        for value in values:
            folded = fold(value)
            if len(folded) < MIN_DERIVED:
                continue
            raw = value.encode()
            derived = derived_needles(value)
            for needle, label in derived:
                needles[needle] = False
                self.labels.setdefault(needle, label)
                if len(needle) <= _STREAM_NEEDLE_MAX:
                    stream.add(needle)
            self._plain.update((folded, folded[::-1], _secret_part(value)))
            for core in _base32_cores(raw):
                needles.setdefault(core, True)
                self.labels.setdefault(core, "base32")
            self._byte_needles += [(raw, "raw"), (raw[::-1], "reversed"), (value.encode("utf-16-le"), "utf16")]
            self._byte_needles.append((xor_profile(raw), "xor"))
        self._needles = tuple(sorted(needles, key=len, reverse=True))
        # One RE2 pass (a DFA) tells whether any of the ~40 needles of a value is in a view at all.
        self._any_needle = _alternation(self._needles)
        self._plain_min = min((len(n) for n in self._plain), default=0)
        # A value with a filler between its characters shows its first four characters k apart:
        # one regular-expression pass rules most texts out before the strides are folded.
        starts = {text[:4] for value in values for text in (value, value[::-1], _secret_tail(value)) if len(text) >= 4}
        gapped = [f".{{{stride - 1}}}".join(re.escape(c) for c in start) for start in starts for stride in STRIDES]
        self._stride_hint = FastPattern("|".join(gapped), re.IGNORECASE | re.DOTALL) if gapped else None
        self._expand = frozenset(n for n, expand in needles.items() if expand)
        self._min_needle = min((len(n) for n in self._needles), default=0)
        self._prefix_len = min(8, self._min_needle) if self._needles else 0
        self._prefixes = frozenset(n[: self._prefix_len] for n in self._needles)
        self.stream_needles = tuple(sorted(stream, key=len, reverse=True))
        # Every MIN_DERIVED-character piece of the stream needles: a split value puts one of them
        # right at the end of a field or across the boundary, so a few set lookups rule most out.
        self.stream_grams = frozenset().union(*(_grams(n) for n in self.stream_needles))
        self._active = bool(self._forms)

    def __bool__(self) -> bool:
        return self._active

    def _b64_contains_secret(self, token: str) -> bool:
        raw = token.replace("-", "+").replace("_", "/")
        raw += "=" * (-len(raw) % 4)
        try:
            decoded = base64.b64decode(raw, validate=True)
        except (binascii.Error, ValueError):
            return False
        return any(v in decoded for v in self._bytes_values)

    def _exact_spans(self, s: str) -> list[tuple[int, int]]:
        # Every occurrence of every form, merged before replacing: a single leftmost-match pass
        # would leave the tail of a second value that overlaps the first visible.
        spans: list[tuple[int, int]] = []
        for form in self._forms:
            start = s.find(form)
            while start != -1:
                spans.append((start, start + len(form)))
                start = s.find(form, start + 1)
        return spans

    def _hits(self, view: str) -> list[str]:
        """The needles in a folded view (longest first)."""
        size, k = len(view), self._prefix_len
        if size < self._min_needle or not k:
            return []
        # A needle is in the view only if its first k characters are: a short view checks its
        # k-grams against a set (~0.1 µs each); a long one takes one RE2 pass (a call costs ~10 µs,
        # and ``in`` for each of a run's ~150 needles ~25 µs even on 20 characters).
        if size <= _RE2_FROM:
            prefixes = self._prefixes
            if not any(view[i : i + k] in prefixes for i in range(size - k + 1)):
                return []
        elif self._any_needle is not None and self._any_needle.search(view) is None:
            return []
        return [n for n in self._needles if n in view]

    def _folded_spans(self, s: str, view: str) -> list[tuple[int, int]]:
        hits = self._hits(view)
        if not hits:
            return []
        index = _FoldIndex(s)
        spans: list[tuple[int, int]] = []
        for needle in hits:
            start = view.find(needle)
            while start != -1:
                a, b = index.span(start)[0], index.span(start + len(needle) - 1)[1]
                if needle in self._expand:  # base32 inside a longer base32 text: the whole token
                    while a > 0 and s[a - 1] in _BASE32_CHARS:
                        a -= 1
                    while b < len(s) and s[b] in _BASE32_CHARS:
                        b += 1
                spans.append((a, b))
                start = view.find(needle, start + 1)
        return spans

    def _exact(self, s: str) -> bool:
        """False when ``s`` holds no exact form (and, when gated, no base64 core) of any value."""
        if len(s) < _RE2_FROM or self._exact_gate is None:
            return True
        return self._exact_gate.search(s) is not None

    def text(self, s: str) -> str:
        return self._text(s, None)

    def _text(self, s: str, view: str | None) -> str:
        """:meth:`text`; ``view``, when given, is ``fold(s)`` already computed."""
        if not self._active or not s:
            return s
        if len(s) <= _MEMO_CHARS:
            key = (self._memo_id, s)
            known = _MASKED.get(key)
            if known is None:
                known = _remember(_MASKED, key, self._text_uncached(s, view))
            return known
        return self._text_uncached(s, view)

    def _text_uncached(self, s: str, view: str | None) -> str:
        original = s
        exact = self._exact(s)
        if exact and len(s) >= self._min_form:
            for form in self._forms:
                if form in s:
                    s, view = _replace(s, self._exact_spans(s)), None
                    break
        if self._needles and len(s) * 3 >= self._min_needle:
            spans = self._folded_spans(s, fold(s) if view is None else view)
            if spans:
                s = _replace(s, spans)
        if len(s) >= 8 and (exact or s is not original or not self._cores_gated):  # shorter: no base64 token worth decoding
            for core in self._cores:
                if core in s:
                    s = _B64_TOKEN.sub(lambda m: REDACTED if self._b64_contains_secret(m.group(0)) else m.group(0), s)
                    break
        if self._needles and len(s) >= MIN_DERIVED:
            deep = self._deep_spans(s)
            if deep:
                s = _replace(s, [(a, b) for a, b, _ in deep])
        return s

    def detect(self, s: str) -> str:
        """The form a value takes in ``s`` (``raw``, ``base85``, ``rot7``, ``xor+hex``…), or ''."""
        if not self._active or not s:
            return ""
        if len(s) <= _MEMO_CHARS:
            key = (self._memo_id, s)
            known = _DETECTED.get(key)
            if known is None:
                known = _remember(_DETECTED, key, self._detect_uncached(s))
            return known
        return self._detect_uncached(s)

    def _detect_uncached(self, s: str) -> str:
        exact = self._exact(s)
        for form in self._forms if exact else ():
            if form in s:
                return "raw" if form in self._values else "encoded"
        hits = self._hits(fold(s))
        if hits:
            return self.labels.get(hits[0], "encoded")
        if len(s) >= 8 and (exact or not self._cores_gated) and any(core in s for core in self._cores):
            for match in _B64_TOKEN.finditer(s):
                if self._b64_contains_secret(match.group(0)):
                    return "base64"
        spans = self._deep_spans(s, first=True)
        return spans[0][2] if spans else ""

    def _deep_spans(self, s: str, *, first: bool = False) -> list[tuple[int, int, str]]:
        """Values behind entities, escapes, codes, look-alikes, strides and decoded tokens (engine/unfold.py)."""
        spans: list[tuple[int, int, str]] = []
        if len(s) < self._min_needle:  # every decoding shortens its text: no value fits
            return spans
        if DEEP_TRIGGER.search(s) is None:  # nothing to decode: only a stride can hide a value
            return self._stride_spans(s)
        chars = char_view(s)
        if chars is not None:
            view = chars.text
            for a, b, label in self._labelled_spans(view, fold(view)):
                spans.append((*chars.span(a, b), f"{label}+{chars.label}" if label != "spaced" else chars.label))
                if first:
                    return spans
        spans += self._stride_spans(s)
        if first and spans:
            return spans
        for decoded in decoded_tokens(s):
            label = self._in_bytes(decoded.data, decoded.texty)
            if label:
                spans.append((decoded.start, decoded.end, f"{label}+{decoded.label}" if label != "raw" else decoded.label))
                if first:
                    return spans
        return spans

    def _labelled_spans(self, text: str, view: str) -> list[tuple[int, int, str]]:
        hits = self._hits(view)
        if not hits:
            return []
        index = _FoldIndex(text)
        out = []
        for needle in hits:
            start = view.find(needle)
            if start != -1:
                out.append((index.span(start)[0], index.span(start + len(needle) - 1)[1], self.labels.get(needle, "encoded")))
        return out

    def _stride_spans(self, s: str) -> list[tuple[int, int, str]]:
        """A value with a filler between its characters: every second or third character of ``s``
        (case-folded only, so the filler after a separator keeps its place) holds it, folded."""
        if len(s) < 2 * self._plain_min or self._stride_hint is None or self._stride_hint.search(s) is None:
            return []
        lowered = s.casefold()
        if len(lowered) != len(s):
            return []
        out: list[tuple[int, int, str]] = []
        for stride, offset, sub in strides(lowered):
            view = fold(sub)
            for needle in self._plain:
                start = view.find(needle)
                if start != -1:
                    index = _FoldIndex(sub)
                    a, b = index.span(start)[0], index.span(start + len(needle) - 1)[1]
                    out.append((offset + a * stride, offset + (b - 1) * stride + 1, f"stride{stride}"))
        return out

    def _in_bytes(self, data: bytes, texty: bool) -> str:
        """How decoded bytes hold a value: raw, reversed, UTF-16, XORed with one byte, or a folded form."""
        profile = b""
        for needle, label in self._byte_needles:
            if label == "xor":
                profile = profile or xor_profile(data)
                if len(needle) >= MIN_DERIVED - 1 and needle in profile:
                    return label
            elif needle in data:
                return label
        if texty:
            hits = self._hits(fold(data.decode("utf-8", "replace")))
            if hits:
                return self.labels.get(hits[0], "encoded")
        return ""

    def json(self, obj: Any) -> Any:
        if not self._active:
            return obj
        if isinstance(obj, str):
            return self.text(obj)
        if isinstance(obj, dict):
            return {self.text(k) if isinstance(k, str) else k: self.json(v) for k, v in obj.items()}
        if isinstance(obj, (list, tuple)):
            return [self.json(v) for v in obj]
        return obj


def _same(text: str) -> str:
    return text


def _edge_prefix(window: str, needle: str) -> int:
    """Length of the longest proper prefix of ``needle`` (at least MIN_DERIVED) that ends ``window``."""
    probe = needle[:MIN_DERIVED]
    i = window.find(probe, max(0, len(window) - len(needle) + 1))
    while i != -1:
        if needle.startswith(window[i:]):
            return len(window) - i
        i = window.find(probe, i + 1)
    return 0


class StreamRedactor:
    """Redacts the events of one stream (a case attempt of a lane) in order; see the module docstring.

    Keeps, per field (event type + path, list indices ignored), the folded tail of the text seen
    last: at most the longest needle minus one character, in memory only.
    """

    def __init__(self, redactor: Redactor) -> None:
        self.redactor = redactor
        self._needles = redactor.stream_needles
        self._keep = max((len(n) for n in self._needles), default=1) - 1
        self._tails: dict[str, str] = {}
        # A value whose start ended a field (masked there): its rest, wherever it shows up next
        # (another field, another event: a second URL, the answer), is masked too.
        self._pending: dict[str, int] = {}

    def payload(self, event_type: str, payload: Any) -> Any:
        """The payload with every value masked, including the parts of values split across events."""
        if not self.redactor:
            return payload
        if not self._needles:
            return self.redactor.json(payload)
        return self._walk(payload, event_type, True)

    def _walk(self, obj: Any, path: str, redact: bool) -> Any:
        """``obj`` with split parts masked, and redacted when ``redact``.

        Unredacted (``redact`` false), the same object comes back when nothing was masked. A
        string holding a JSON object or array (a tool result envelope, raw tool-call arguments) is
        followed into: its fields are the ones that continue from event to event. When one of them
        is masked, the string is re-encoded compactly, as the engine writes it.
        """
        if isinstance(obj, str):
            if len(obj) >= 2 and obj[0] in "{[" and obj[-1] in "}]":
                try:
                    inner = json.loads(obj)
                    walked = self._walk(inner, path + "{}", False) if isinstance(inner, (dict, list)) else inner
                except (ValueError, RecursionError):  # not JSON, or nested too deep to follow
                    inner = walked = None
                if isinstance(inner, (dict, list)):
                    if walked is not inner:
                        obj = json.dumps(walked, separators=(",", ":"), ensure_ascii=False)
                    return self.redactor.text(obj) if redact else obj
            masked, view = self._split(path, obj)
            return self.redactor._text(masked, view) if redact else masked
        if isinstance(obj, dict):
            text = self.redactor.text if redact else _same
            items = {text(k) if isinstance(k, str) else k: self._walk(v, f"{path}.{k}"[:_PATH_MAX], redact) for k, v in obj.items()}
            return items if redact or any(items[k] is not v for k, v in obj.items()) else obj
        if isinstance(obj, (list, tuple)):
            values = [self._walk(v, f"{path}[]", redact) for v in obj]
            return values if redact or any(a is not b for a, b in zip(values, obj, strict=True)) else obj
        return obj

    def _split(self, key: str, s: str) -> tuple[str, str | None]:
        """``s`` with the parts of split values masked, and ``fold(s)`` when nothing was."""
        keep = self._keep
        tail = self._tails.pop(key, "")
        view = fold(s)
        if self._pending:
            rest = self._rest(s, view)
            if rest is not None:
                self._tails[key] = view[-keep:]
                return rest, None
        boundary = len(tail)
        # Only the characters around the boundary and at the end can take part in a split value.
        head = tail + view[:keep] if tail else ""
        end = (tail + view)[-keep:] if len(view) < keep else view[-keep:]
        self._tails[key] = end
        if len(self._tails) > _STREAM_KEYS:
            del self._tails[next(iter(self._tails))]
        grams = self.redactor.stream_grams
        at_end = len(end) >= MIN_DERIVED and end[-MIN_DERIVED:] in grams
        across = boundary > 0 and any(head[g : g + MIN_DERIVED] in grams for g in range(max(0, boundary - MIN_DERIVED + 1), boundary))
        if not view or not (at_end or across):
            return s, view
        completed = 0  # folded characters at the start of ``s`` that complete a value begun earlier
        for needle in self._needles if head else ():
            lo, hi = max(0, boundary - len(needle) + 1), boundary + len(needle) - 1
            start = head.find(needle, lo, hi)
            while start != -1:
                completed = max(completed, start + len(needle) - boundary)
                start = head.find(needle, start + 1, hi)
        begins = len(view)  # from here on, ``s`` ends with the beginning of a value
        offset = len(tail) + len(view) - len(end)  # where ``end`` starts in tail + view
        for needle in self._needles:
            k = _edge_prefix(end, needle)
            if k:
                begins = min(begins, max(0, offset + len(end) - k - boundary))
                if len(self._pending) < _STREAM_KEYS and len(needle) - k >= _REST_MIN:
                    self._pending[needle] = max(k, self._pending.get(needle, 0))
        if not completed and begins == len(view):
            return s, view
        index = _FoldIndex(s)
        spans = []
        if completed:
            spans.append((0, index.span(min(completed, len(view)) - 1)[1]))
        if begins < len(view):
            spans.append((index.span(begins)[0], len(s)))
        return _replace(s, spans), None

    def _rest(self, s: str, view: str) -> str | None:
        """``s`` with the rest of a value begun at an earlier field's end masked (None: no rest in it)."""
        spans: list[tuple[int, int]] = []
        index: _FoldIndex | None = None
        for needle, k in list(self._pending.items()):
            rest = needle[k:]
            start = view.find(rest)
            if start != -1:
                index = index or _FoldIndex(s)
                spans.append((index.span(start)[0], index.span(start + len(rest) - 1)[1]))
                del self._pending[needle]
        return _replace(s, spans) if spans else None

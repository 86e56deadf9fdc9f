"""Decoded views of a text: where a secret value hides once an agent transformed it (docs/secrets.md).

engine/redact.py finds a value raw, URL-/base64-encoded and in its *folded* view (case, spacing,
``\\u``/``\\x``/``%`` escapes, reversed, rot13, hex, base32). A hostile agent has more tricks; this
module undoes them, each as a :class:`View` that maps its characters back to the source text so
that a value found in it is masked where it was written:

* **characters** (:func:`char_view`): HTML entities (``&#122;``, ``&#x7a;``, ``&amp;``), octal
  (``\\172``), ``\\x``/``\\u``/``\\U`` escapes, and runs of six or more character codes
  (``122, 101, 110`` or ``0x7a 0x65 …``); then NFKC (fullwidth ``ａ``, ligatures, mathematical
  letters) and the Latin look-alikes of Cyrillic and Greek letters (:data:`CONFUSABLES`);
* **tokens** (:func:`token_views`): a run of base64, base32, hex, base85 or ascii85 characters is
  decoded, gunzipped/inflated when it is compressed, and the result decoded again, to
  :data:`MAX_DEPTH` layers. Each decoded layer is searched as bytes (the value, reversed, or
  XORed with any single byte: :func:`xor_profile`) and, when it reads as text, as text;
* **strides** (:func:`strides`): every second or third character (a filler between characters).

ROT-n for every n and partial values are needles, not views (engine/redact.py builds them).

Costs are linear in the text: a view is built only when the text shows its trigger (an ``&``, a
backslash, a non-ASCII character, a long token), decoded output is capped at
:data:`MAX_DECODED` bytes per token, and only output that reads as text is decoded further.
"""

from __future__ import annotations

import base64
import binascii
import bisect
import dataclasses
import html
import re
import threading
import unicodedata
import zlib
from collections.abc import Callable, Iterator
from typing import Any

import re2

# Three layers: the nested forms are two deep (base64 of base64, gzip of base64, hex of
# XOR); one more covers a third wrapper (base64 of gzip of base64) while keeping the worst case
# (every layer a token of the one before) at three decodes per input byte.
MAX_DEPTH = 3
MAX_DECODED = 1 << 20  # a compressed token may expand to this much, no more (zip bombs)
GZIP_MAGIC = b"\x1f\x8b"
MIN_TOKEN = 16  # the shortest token decoded: an encoding of 12 bytes (shorter values are found by their exact forms)
STRIDES = (2, 3)

# Latin look-alikes of Cyrillic and Greek letters (the subset of Unicode's confusables.txt whose
# prototype is one ASCII letter; NFKC handles fullwidth and compatibility forms). A table, not a
# dependency: a detector needs the letters an attacker can type to look Latin, nothing more.
CONFUSABLES = str.maketrans(
    {
        **dict(zip("аеорсухѕіјԁԛԝһӏвкмнтɡ", "aeopcyxsijdqwhlbkmhtg", strict=True)),
        **dict(zip("АВЕКМНОРСТУХЅІЈԚԜ", "ABEKMHOPCTYXSIJQW", strict=True)),
        **dict(zip("αονρτυικχεηωϲ", "aovptuikxenwc", strict=True)),
        **dict(zip("ΑΒΕΖΗΙΚΜΝΟΡΤΥΧ", "ABEZHIKMNOPTYX", strict=True)),
    }
)
FAST_FROM = 512  # the shortest text FastPattern hands to RE2
# Python's ``\s`` on ASCII text, as character-class members: RE2's lacks ``\v`` and ``\x1c``-``\x1f``.
_ASCII_SPACE = r"\t\n\x0b\x0c\r\x1c-\x1f "


class FastPattern:
    r"""A regular expression searched with RE2 on ASCII text, with Python's ``re`` on any other.

    The patterns that scan a whole text (a 64 KiB upload through the egress proxy, every event the
    scanner reads) cost ~1 ms each with ``re``, which tries every position; RE2 runs a DFA in one
    linear pass, ~50 times faster. On ASCII text both find the same matches (``\d`` is ``[0-9]``
    there, ``\s`` is spelled out as Python's); on other text Python's Unicode ``\d``, ``\s`` and case
    folding stay in force (``str.isascii`` is a flag read, not a scan).
    """

    def __init__(self, pattern: str, flags: int = 0, *, class_spaces: bool = False) -> None:
        """``class_spaces``: ``pattern`` writes ``\\s`` only inside character classes (spelled out for RE2)."""
        self.pattern = pattern
        self.python = re.compile(pattern, flags)
        self.fast: Any = None  # an re2 pattern (re2 ships no type information), None when RE2 rejects it
        ascii_pattern = pattern.replace(r"\s", _ASCII_SPACE) if class_spaces else pattern
        options = re2.Options()
        options.log_errors = False
        options.max_mem = 64 << 20
        options.case_sensitive = not flags & re.IGNORECASE
        options.dot_nl = bool(flags & re.DOTALL)
        try:
            self.fast = re2.compile(ascii_pattern, options)
        except re2.error:
            self.fast = None

    def _engine(self, text: str) -> Any:
        # Below FAST_FROM characters a call into RE2 (its wrapper encodes the text, maps offsets)
        # costs more than Python's ``re`` scanning the whole text.
        return self.fast if self.fast is not None and len(text) >= FAST_FROM and text.isascii() else self.python

    def search(self, text: str) -> Any:
        return self._engine(text).search(text)

    def finditer(self, text: str) -> Iterator[Any]:
        yield from self._engine(text).finditer(text)


_CHAR_ITEM = re.compile(
    r"&#[xX]([0-9a-fA-F]{1,6});?"
    r"|&#([0-9]{1,7});?"
    r"|&[A-Za-z][A-Za-z0-9]{1,31};"
    r"|\\([0-7]{1,3})"
    r"|\\[xX]([0-9a-fA-F]{2})"
    r"|\\u\{?([0-9a-fA-F]{4,6})\}?"
    r"|\\U([0-9a-fA-F]{8})"
)
_CODE_RUN = re.compile(r"(?<![\w.])(?:0[xX][0-9a-fA-F]{1,2}|\d{2,3})(?:[\s,;]{1,3}(?:0[xX][0-9a-fA-F]{1,2}|\d{2,3})){5,}(?![\w.])")
_CODE = re.compile(r"0[xX][0-9a-fA-F]{1,2}|\d{2,3}")
_CODE_TRIGGER = FastPattern(r"\d\d[\s,;]{1,3}\d\d[\s,;]{1,3}\d\d", class_spaces=True)
_DIGIT = re.compile(r"\d")
_LETTER = re.compile(r"[A-Za-z]")
_NON_ASCII = re.compile(r"[^\x00-\x7f]+")
_TOKEN = FastPattern(rf"<~.{{4,}}?~>|[!-~]{{{MIN_TOKEN},}}", re.DOTALL)
_B64 = FastPattern(rf"[A-Za-z0-9+/_-]{{{MIN_TOKEN},}}={{0,2}}")
_HEX = FastPattern(rf"(?:[0-9a-fA-F]{{2}}[\s:,]?){{{MIN_TOKEN // 2},}}", class_spaces=True)
# Compiled once: re's own cache of module-level calls holds 512 patterns and a Django process
# fills it, so a call like re.fullmatch(r"...", s) on the scan's path would be compiled again and again.
_SEPARATORS = re.compile(r"[\s:,]")
_ALL_HEX = re.compile(r"[0-9a-fA-F]+")
_ALL_B64 = re.compile(r"[A-Za-z0-9+/_-]+={0,2}")
_ALL_B32 = re.compile(r"[A-Z2-7]+")
_B85_CHARS = frozenset(b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz!#$%&()*+-;<=>?@^_`{|}~")


# Whether any view could differ from the text: a non-ASCII character, an entity or escape, a run
# of character codes, or a token long enough to decode. One search rules most short strings out.
DEEP_TRIGGER = FastPattern(rf"[^\x00-\x7f]|[&\\]|\d\d[\s,;]{{1,3}}\d\d[\s,;]{{1,3}}\d\d|[!-~]{{{MIN_TOKEN}}}", class_spaces=True)


@dataclasses.dataclass
class View:
    """A decoded text and how its characters map back to the source's.

    ``segments`` are ``(view_start, source_start, source_end, literal)``: a literal segment maps
    character for character, any other one as a whole (an entity, a run of codes, a token).
    """

    label: str
    text: str
    segments: list[tuple[int, int, int, bool]]
    parent: View | None = None

    def span(self, a: int, b: int) -> tuple[int, int]:
        """The source span of view characters ``[a, b)`` (through every parent view)."""
        lo, hi = self._local(a, first=True), self._local(b - 1, first=False)
        return self.parent.span(lo, hi) if self.parent is not None else (lo, hi)

    def _local(self, index: int, *, first: bool) -> int:
        starts = [s[0] for s in self.segments]
        seg = self.segments[max(0, bisect.bisect_right(starts, index) - 1)]
        view_start, source_start, source_end, literal = seg
        if literal:
            offset = source_start + index - view_start
            return offset if first else offset + 1
        return source_start if first else source_end


def _rewrite(text: str, pattern: re.Pattern[str], replace: Callable[[re.Match[str]], str | None], label: str) -> View | None:
    """``text`` with every match of ``pattern`` replaced by ``replace(match)`` (None: kept), or None if nothing changed."""
    pieces: list[str] = []
    segments: list[tuple[int, int, int, bool]] = []
    pos = out = 0
    for match in pattern.finditer(text):
        new = replace(match)
        a, b = match.span()
        if new is None or new == match.group(0):
            continue
        if a > pos:
            segments.append((out, pos, a, True))
            pieces.append(text[pos:a])
            out += a - pos
        segments.append((out, a, b, len(new) == b - a))
        pieces.append(new)
        out += len(new)
        pos = b
    if not segments:
        return None
    if pos < len(text):
        segments.append((out, pos, len(text), True))
        pieces.append(text[pos:])
    return View(label, "".join(pieces), segments)


def _chr(code: int) -> str | None:
    return chr(code) if 0 < code <= 0x10FFFF and not 0xD800 <= code <= 0xDFFF else None


def _char_item(match: re.Match[str]) -> str | None:
    hex_entity, dec_entity, octal, x_escape, u_escape, big_u = match.groups()
    if hex_entity or x_escape or u_escape or big_u:
        return _chr(int(hex_entity or x_escape or u_escape or big_u, 16))
    if dec_entity:
        return _chr(int(dec_entity))
    if octal:
        return _chr(int(octal, 8))
    return html.unescape(match.group(0))


def _code_run(match: re.Match[str]) -> str | None:
    chars = [_chr(int(c, 16) if c[:2].lower() == "0x" else int(c)) for c in _CODE.findall(match.group(0))]
    return "".join(c for c in chars if c) if all(c and " " <= c <= "~" for c in chars) else None


def _glyph(match: re.Match[str]) -> str:
    return unicodedata.normalize("NFKC", match.group(0)).translate(CONFUSABLES)


def _chain(
    view: View | None, text: str, pattern: re.Pattern[str], replace: Callable[[re.Match[str]], str | None], label: str
) -> View | None:
    base = view.text if view is not None else text
    step = _rewrite(base, pattern, replace, label)
    if step is None:
        return view
    step.parent = view
    return step


def char_view(text: str) -> View | None:
    """``text`` with entities, escapes and character codes decoded, then NFKC and look-alikes folded (None: no change)."""
    view: View | None = None
    if "&" in text or "\\" in text:
        view = _chain(view, text, _CHAR_ITEM, _char_item, "char_codes")
    if _CODE_TRIGGER.search(text):
        view = _chain(view, text, _CODE_RUN, _code_run, "char_codes")
    if not (view.text if view is not None else text).isascii():
        view = _chain(view, text, _NON_ASCII, _glyph, "homoglyph")
    return view


def strides(folded: str) -> Iterator[tuple[int, int, str]]:
    """``(stride, offset, folded[offset::stride])``: the text read one character in two or three."""
    for stride in STRIDES:
        if len(folded) >= 2 * stride:
            for offset in range(stride):
                yield stride, offset, folded[offset::stride]


def xor_profile(data: bytes) -> bytes:
    """Byte ``i`` XOR byte ``i - 1``: the same for ``data`` XORed with any single byte."""
    if len(data) < 2:
        return b""
    number = int.from_bytes(data, "big")
    return (number ^ (number >> 8)).to_bytes(len(data), "big")[1:]


def _decompress(data: bytes) -> bytes | None:
    if data[:2] == GZIP_MAGIC:
        inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
    elif len(data) > 2 and data[0] == 0x78 and (data[0] * 256 + data[1]) % 31 == 0:
        inflater = zlib.decompressobj()
    else:
        return None
    try:
        return inflater.decompress(data, MAX_DECODED)
    except zlib.error:
        return None


def _texty(data: bytes) -> bool:
    printable = sum(32 <= b < 127 or b in (9, 10, 13) for b in data[:4096])
    return bool(data) and printable >= 0.9 * min(len(data), 4096)


def _decodings(token: str) -> Iterator[tuple[str, bytes]]:
    """Each way ``token`` decodes to bytes (label, bytes)."""
    core = token[2:-2] if token.startswith("<~") and token.endswith("~>") else token
    compact = _SEPARATORS.sub("", core)
    if len(compact) % 2 == 0 and _ALL_HEX.fullmatch(compact):
        yield "hex", bytes.fromhex(compact)
        return
    if _ALL_B64.fullmatch(core):
        padded = core.replace("-", "+").replace("_", "/").rstrip("=")
        try:
            yield "base64", base64.b64decode(padded + "=" * (-len(padded) % 4), validate=True)
        except (binascii.Error, ValueError):
            pass
        upper = core.rstrip("=").upper()
        if _ALL_B32.fullmatch(upper):
            try:
                yield "base32", base64.b32decode(upper + "=" * (-len(upper) % 8))
            except (binascii.Error, ValueError):
                pass
    raw = core.encode()
    if all(b in _B85_CHARS for b in raw):
        try:
            yield "base85", base64.b85decode(raw)
        except ValueError:
            pass
    if all(33 <= b <= 117 or b == 122 for b in raw):
        try:
            yield "ascii85", base64.a85decode(raw)
        except ValueError:
            pass


@dataclasses.dataclass(frozen=True)
class Decoded:
    """A token's bytes after ``label`` decodes (``gzip+base64``: base64, then gunzip)."""

    label: str
    start: int
    end: int
    data: bytes
    texty: bool


def _encoded_like(token: str) -> bool:
    """Digits and letters mixed, as an encoding of random bytes is; a long word or a path is not."""
    return _DIGIT.search(token) is not None and _LETTER.search(token) is not None


def _tokens(text: str) -> Iterator[tuple[int, int, str]]:
    seen: set[tuple[int, int]] = set()
    for pattern in (_TOKEN, _B64, _HEX):
        for match in pattern.finditer(text):
            a, b = match.span()
            token = match.group(0).strip()
            if (a, b) not in seen and len(token) >= MIN_TOKEN and _encoded_like(token):
                seen.add((a, b))
                yield a, b, token


def token_views(text: str, depth: int = MAX_DEPTH) -> Iterator[Decoded]:
    """Every token of ``text`` decoded, to ``depth`` layers; spans are ``text``'s."""
    if depth <= 0:
        return
    for a, b, token in _tokens(text):
        for label, data in _decodings(token):
            yield from _layers(label, a, b, data, depth)


def _layers(label: str, a: int, b: int, data: bytes, depth: int) -> Iterator[Decoded]:
    if len(data) < 4:
        return
    inflated = _decompress(data)
    if inflated is not None:
        label, data = ("gzip+" if data[:2] == GZIP_MAGIC else "zlib+") + label, inflated
    texty = _texty(data)
    yield Decoded(label, a, b, data, texty)
    if depth > 1 and texty:
        inner = data.decode("utf-8", "replace")
        for decoded in token_views(inner, depth - 1):
            yield Decoded(f"{decoded.label}+{label}", a, b, decoded.data, decoded.texty)


_LAST = threading.local()  # per thread: (the last text decoded_tokens() read, its tokens)


def decoded_tokens(text: str) -> tuple[Decoded, ...]:
    """:func:`token_views` of ``text`` as a tuple; the last text's are remembered per thread (the
    redactor's check and the split tracker read the same text one after the other)."""
    last = getattr(_LAST, "value", None)
    if last is not None and last[0] is text:
        return last[1]  # type: ignore[no-any-return]
    found = tuple(token_views(text))
    _LAST.value = (text, found)
    return found

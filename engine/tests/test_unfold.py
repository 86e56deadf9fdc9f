"""engine/unfold.py's :class:`FastPattern`: RE2 on ASCII text finds exactly what Python's ``re`` finds."""

from __future__ import annotations

import random
import re

import pytest

from engine import unfold

PATTERNS = {
    "token": unfold._TOKEN,
    "base64": unfold._B64,
    "hex": unfold._HEX,
    "code trigger": unfold._CODE_TRIGGER,
    "deep trigger": unfold.DEEP_TRIGGER,
}
# Python's ASCII whitespace includes \v and \x1c-\x1f, RE2's \s does not: they must count here too.
ALPHABET = '0123456789abcdefABCDEF xyz+/=_-:,;&\\<~>\t\n\x0b\x0c\r\x1c\x1f!"#'


def texts(seed: int, n: int = 100) -> list[str]:
    """ASCII texts long enough for RE2 (``FAST_FROM``), the characters the patterns care about dense."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        size = rng.randrange(unfold.FAST_FROM, unfold.FAST_FROM + 200)
        out.append("".join(rng.choice(ALPHABET) for _ in range(size)))
    pad = " " * unfold.FAST_FROM
    out += [pad + "12\x0b34\x1c56", pad + "0a\x0b0b\x1c0c\x1d0d\x1e0e\x1f0f 10 11 12", pad + '<~87cURD]i,"Ebo80~>' + "x" * 20]
    return out


@pytest.mark.parametrize("name", list(PATTERNS))
def test_the_fast_pattern_finds_what_python_finds_on_ascii_text(name):
    pattern = PATTERNS[name]
    assert pattern.fast is not None  # RE2 took it: the fast path is what is compared
    for text in texts(sum(map(ord, name))):
        assert pattern._engine(text) is pattern.fast
        fast = [(m.span(), m.group(0)) for m in pattern.finditer(text)]
        slow = [(m.span(), m.group(0)) for m in pattern.python.finditer(text)]
        assert fast == slow, repr(text)


def test_non_ascii_text_is_searched_with_python_unicode_classes():
    arabic_indic = " " * unfold.FAST_FROM + "٩٩, ٩٨, ٩٧"  # decimal codes in Arabic-Indic digits: Python's \d, not RE2's
    assert unfold._CODE_TRIGGER.search(arabic_indic) is not None
    assert unfold._CODE_TRIGGER.fast.search(arabic_indic) is None


def test_a_pattern_re2_rejects_falls_back_to_python():
    pattern = unfold.FastPattern(r"(?<=a)b")  # a look-behind: RE2 has none
    assert pattern.fast is None
    text = "ab cb ab" + " " * unfold.FAST_FROM
    assert [m.span() for m in pattern.finditer(text)] == [(1, 2), (7, 8)]


def test_case_insensitive_and_dotall_flags_carry_over():
    pattern = unfold.FastPattern("a.{1}b", re.IGNORECASE | re.DOTALL)
    assert pattern.search("xA\nBy" + " " * unfold.FAST_FROM) is not None and pattern.fast is not None

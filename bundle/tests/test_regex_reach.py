"""``can_never_match``: patterns that match nothing are found; a pattern that can match never is."""

from __future__ import annotations

import itertools

import pytest
import re2
from hypothesis import given, settings
from hypothesis import strategies as st

from bundle.lint.regex_reach import can_never_match

NEVER = [
    "a^b",
    "a$b",
    "x^",
    "$x",
    "[^\\s\\S]",
    "a[^\\d\\D]",
    "(?:a|b)^c",
    "a+^",
    "\\z.",
    ".\\A",
    "(a$)b",
    "^a\\z\\n",
    "a{2}^",
    "(?i)abc$def",
    "[^[:alpha:][:^alpha:]]",
    "[^\\pL\\PL]x",
    "(x$)+y",
    "(?m:x)$a",
    "(a|b)(c^|d$e)",
    "a{1000}^",
    "(?:(?:a{3}){5})^",
    "x\\Q\\E^",
    "x{,3}^",  # RE2 reads "{,3}" as literal text
    "^Answer: \\d+$\\n",
]
CAN = [
    "",
    "abc",
    "^$",
    "^abc$",
    "(?m)a$\\nb",
    "(?m:^b)",
    "a{0}^",
    "(a|^)b",
    "\\bfoo\\B",
    "a*^",
    "(^|x)y",
    "^(a|b)*$",
    "[]a]",
    "[^]]",
    "(?P<n>a)",
    "(?<n>a)b",
    "\\x{41}",
    "\\p{Greek}+",
    "[\\d\\D]",
    "\\Qa^b\\E",
    "(?i)Yes|No",
    "(?s).*",
    "^\\s*\\{",
    "a{2,}b",
    "$",
    "(^)*a",
    "(a^)?b",
    "(?m)a^",  # never matches in RE2 either, but multi-line anchors are not followed: no claim
    "a|b^c|d",
    "recommendations",
]


@pytest.mark.parametrize("pattern", NEVER)
def test_it_finds_patterns_that_can_never_match(pattern: str) -> None:
    re2.compile(pattern)  # a valid RE2 pattern
    assert can_never_match(pattern)


@pytest.mark.parametrize("pattern", CAN)
def test_it_never_condemns_a_pattern_that_can_match(pattern: str) -> None:
    re2.compile(pattern)
    assert not can_never_match(pattern)


TEXTS = ["".join(chars) for size in range(4) for chars in itertools.product("ab\n{", repeat=size)]


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet="ab^$|()*+?{}2,\\Azs[].\n", max_size=10))
def test_no_text_matches_a_pattern_it_condemns(pattern: str) -> None:
    try:
        compiled = re2.compile(pattern)
    except Exception:  # only patterns RE2 accepts are analysed
        return
    if can_never_match(pattern):
        assert not any(compiled.search(text) for text in TEXTS), pattern

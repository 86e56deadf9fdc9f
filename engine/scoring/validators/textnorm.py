"""Text normalisation steps shared by normalized_match, token_f1 and the overlap scores."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable

ARTICLES = re.compile(r"\b(a|an|the)\b", re.IGNORECASE)
WHITESPACE = re.compile(r"\s+")
FORMATTING = str.maketrans("", "", ",()[]")


def collapse_whitespace(text: str) -> str:
    return WHITESPACE.sub(" ", text)


def strip_punctuation(text: str) -> str:
    return "".join(ch for ch in text if unicodedata.category(ch)[0] not in ("P", "S"))


def strip_currency(text: str) -> str:
    return "".join(ch for ch in text if unicodedata.category(ch) != "Sc")


def remove_articles(text: str) -> str:
    return ARTICLES.sub(" ", text)


STEPS: dict[str, Callable[[str], str]] = {
    "trim": str.strip,
    "lowercase": str.casefold,
    "collapse_whitespace": collapse_whitespace,
    "strip_punctuation": strip_punctuation,
    "strip_currency": strip_currency,
    "strip_formatting": lambda t: t.translate(FORMATTING),
    "normalize_unicode": lambda t: unicodedata.normalize("NFKC", t),
    "remove_articles": remove_articles,
    "sort_words": lambda t: " ".join(sorted(t.split())),
    "sort_lines": lambda t: "\n".join(sorted(t.split("\n"))),
}


def apply_pipeline(text: str, steps: list[str]) -> str:
    for step in steps:
        text = STEPS[step](text)
    return text


def simple_normalize(text: str, *, case_insensitive: bool, normalize: bool) -> str:
    if case_insensitive:
        text = text.casefold()
    if normalize:
        text = collapse_whitespace(text).strip()
    return text

"""Word-level differences between two texts, for the pages that put an expected value beside an
actual one (the replay's verdicts, side by side, comparisons).

Shading a whole line or cell hides a one-character change (``8000`` vs ``8080`` looked the same,
issue 25); these pieces let a template mark exactly the words that differ, with ``<del>`` on the
left and ``<ins>`` on the right, so the difference reads without colour too.
"""

from __future__ import annotations

import difflib
import re
from typing import NamedTuple

# Words, runs of punctuation and runs of white space are the units compared: "port: 8000" and
# "port: 8080" differ in one unit, "8000" vs "8080", not in one character of a longer word.
_UNITS = re.compile(r"\w+|\s+|[^\w\s]+")
# Past this many units on either side the comparison is skipped (difflib is quadratic at worst):
# the texts are shown whole and marked as different.
UNIT_LIMIT = 4000
MOSTLY_ALIKE = 0.75  # difflib ratio from which two words are marked character by character


class Piece(NamedTuple):
    text: str
    changed: bool


class WordDiff(NamedTuple):
    left: list[Piece]
    right: list[Piece]
    same: bool


def _units(text: str) -> list[str]:
    return _UNITS.findall(text)


def _merge(pieces: list[Piece]) -> list[Piece]:
    """Neighbouring pieces of the same kind as one, so a template writes few tags; a space between
    two changes belongs to the change ("no idea" is one mark, not two)."""
    pieces = [p for p in pieces if p.text]
    for i in range(1, len(pieces) - 1):
        if not pieces[i].changed and not pieces[i].text.strip() and pieces[i - 1].changed and pieces[i + 1].changed:
            pieces[i] = Piece(pieces[i].text, True)
    merged: list[Piece] = []
    for piece in pieces:
        if not piece.text:
            continue
        if merged and merged[-1].changed == piece.changed:
            merged[-1] = Piece(merged[-1].text + piece.text, piece.changed)
        else:
            merged.append(piece)
    return merged


def word_diff(left: str, right: str) -> WordDiff:
    """``left`` and ``right`` cut into pieces, each marked changed or not."""
    if left == right:
        return WordDiff([Piece(left, False)] if left else [], [Piece(right, False)] if right else [], True)
    a, b = _units(left), _units(right)
    if len(a) > UNIT_LIMIT or len(b) > UNIT_LIMIT:
        return WordDiff(_merge([Piece(left, True)]), _merge([Piece(right, True)]), False)
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    out_left: list[Piece] = []
    out_right: list[Piece] = []
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "replace" and i2 - i1 == 1 and j2 - j1 == 1:
            left_pieces, right_pieces = _within_word(a[i1], b[j1])
            out_left.extend(left_pieces)
            out_right.extend(right_pieces)
            continue
        changed = op != "equal"
        out_left.append(Piece("".join(a[i1:i2]), changed))
        out_right.append(Piece("".join(b[j1:j2]), changed))
    return WordDiff(_merge(out_left), _merge(out_right), False)


def _within_word(left: str, right: str) -> tuple[list[Piece], list[Piece]]:
    """One word for another: when they are mostly alike (``8000`` and ``8080``, three characters of
    four in common), the characters that differ; otherwise the whole word ("note" and "no")."""
    matcher = difflib.SequenceMatcher(None, left, right, autojunk=False)
    if len(left) > 64 or len(right) > 64 or matcher.ratio() < MOSTLY_ALIKE:
        return [Piece(left, True)], [Piece(right, True)]
    out_left: list[Piece] = []
    out_right: list[Piece] = []
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        out_left.append(Piece(left[i1:i2], op != "equal"))
        out_right.append(Piece(right[j1:j2], op != "equal"))
    return out_left, out_right

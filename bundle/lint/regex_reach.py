"""Whether an RE2 pattern can match anything at all (``regex_match`` validators search with it).

A small parser of RE2's syntax feeds an abstract interpretation that follows, through every
branch and repetition, two facts about the position a match has reached: whether it may be the
start of the text and whether it may be the end. An anchor the position cannot satisfy (``a^b``:
``^`` after a character, ``$x``: a character after the end) or a character class that holds no
character (``[^\\s\\S]``) kills the path; a pattern with no path left can never match, whatever the
agent outputs. The analysis never claims that of a pattern that can match: what it does not
understand, it assumes can match (multi-line ``^``/``$``, ``\\b``/``\\B``, unknown syntax).
"""

from __future__ import annotations

import dataclasses

# A state: (the position may be the start of the text, the position may be the end of the text).
State = tuple[bool, bool]
States = frozenset[State]
ALL: States = frozenset({(True, True), (True, False), (False, True), (False, False)})
_AFTER_CHAR: States = frozenset({(False, False), (False, True)})
_NEGATIONS = {"d": "D", "s": "S", "w": "W"}


class _Unknown(Exception):
    """Syntax the analysis does not follow: assume the pattern can match."""


@dataclasses.dataclass(frozen=True, slots=True)
class _Node:
    kind: str  # char | none | begin | end | pass | group | alt | repeat
    items: tuple[_Node, ...] = ()
    low: int = 0
    high: int | None = None
    bare: bool = False  # RE2 applies a repetition written after it to what comes before it


_CHAR, _NONE, _BEGIN, _END, _PASS = _Node("char"), _Node("none"), _Node("begin"), _Node("end"), _Node("pass")
_FLAGS = _Node("pass", bare=True)  # (?m): a repetition after it repeats the atom before it


def can_never_match(pattern: str) -> bool:
    """True only when no text contains a match of ``pattern`` (an RE2 pattern that compiles)."""
    try:
        node = _Parser(pattern).parse()
        return not _run(node, ALL, {})
    except (_Unknown, IndexError, ValueError, RecursionError):
        return False


_Memo = dict[tuple[int, States], States]


def _run(node: _Node, states: States, memo: _Memo) -> States:
    """The states ``node`` can leave a match in, entered in ``states`` (each pair computed once:
    nested repetitions would otherwise multiply their iterations)."""
    if not states:
        return states
    key = (id(node), states)
    if key not in memo:
        memo[key] = _step(node, states, memo)
    return memo[key]


def _step(node: _Node, states: States, memo: _Memo) -> States:
    if node.kind == "char":
        return _AFTER_CHAR if any(not end for _, end in states) else frozenset()
    if node.kind == "none":
        return frozenset()
    if node.kind == "begin":
        return frozenset(s for s in states if s[0])
    if node.kind == "end":
        return frozenset(s for s in states if s[1])
    if node.kind == "pass":
        return states
    if node.kind == "group":
        for item in node.items:
            states = _run(item, states, memo)
        return states
    if node.kind == "alt":
        return frozenset().union(*(_run(item, states, memo) for item in node.items))
    return _repeat(node, states, memo)


def _repeat(node: _Node, states: States, memo: _Memo) -> States:
    """Every state ``low`` to ``high`` iterations can reach. The states after k iterations depend
    only on those after k - 1, among 16 possible sets: the sequence soon repeats, and its period
    tells every later value without running them (``{1000}`` costs what ``{16}`` does)."""
    sequence = [states]
    seen = {states: 0}
    cycle_start = None
    while node.high is None or len(sequence) <= node.high:
        following = _run(node.items[0], sequence[-1], memo)
        if following in seen:
            cycle_start = seen[following]
            break
        seen[following] = len(sequence)
        sequence.append(following)

    def after(count: int) -> States:
        if count < len(sequence):
            return sequence[count]
        assert cycle_start is not None  # past the end only when the sequence repeats
        return sequence[cycle_start + (count - cycle_start) % (len(sequence) - cycle_start)]

    last = node.low + len(sequence) if node.high is None else min(node.high, node.low + len(sequence))
    return frozenset().union(*(after(count) for count in range(node.low, last + 1)))


class _Parser:
    """RE2 syntax (https://github.com/google/re2/wiki/Syntax) as far as matching anything goes."""

    def __init__(self, pattern: str) -> None:
        self.text = pattern
        self.pos = 0
        self.multiline = [False]

    def parse(self) -> _Node:
        node = self._alternation()
        if self.pos != len(self.text):
            raise _Unknown
        return node

    def _peek(self) -> str:
        return self.text[self.pos] if self.pos < len(self.text) else ""

    def _alternation(self) -> _Node:
        branches = [self._sequence()]
        while self._peek() == "|":
            self.pos += 1
            branches.append(self._sequence())
        return branches[0] if len(branches) == 1 else _Node("alt", tuple(branches))

    def _sequence(self) -> _Node:
        items: list[_Node] = []
        while self._peek() not in ("", "|", ")"):
            atom = self._atom()
            items.append(self._quantified(atom))
        return _Node("group", tuple(items))

    def _quantified(self, atom: _Node) -> _Node:
        if atom.bare and self._peek() in ("*", "+", "?", "{"):
            raise _Unknown  # (?m)* or \\Qab\\E+: not followed
        while True:
            char = self._peek()
            if char in ("*", "+", "?"):
                self.pos += 1
                low, high = {"*": (0, None), "+": (1, None), "?": (0, 1)}[char]
            elif char == "{" and (bounds := self._bounds()) is not None:
                low, high = bounds
            else:
                return atom
            if self._peek() == "?":  # non-greedy: the same language
                self.pos += 1
            atom = _Node("repeat", (atom,), low, high)

    def _bounds(self) -> tuple[int, int | None] | None:
        end = self.text.find("}", self.pos)
        inner = self.text[self.pos + 1 : end] if end != -1 else ""
        low, comma, high = inner.partition(",")
        if not low.isdigit() or (high and not high.isdigit()):
            return None  # RE2 reads a "{" that starts no repetition as a literal
        self.pos = end + 1
        return int(low), (int(high) if high else None) if comma else int(low)

    def _atom(self) -> _Node:
        char = self.text[self.pos]
        self.pos += 1
        if char == "(":
            return self._group()
        if char == "[":
            return self._class()
        if char == "\\":
            return self._escape()
        if char == "^":
            return _PASS if self.multiline[-1] else _BEGIN
        if char == "$":
            return _PASS if self.multiline[-1] else _END
        return _CHAR

    def _group(self) -> _Node:
        multiline = self.multiline[-1]
        if self.text.startswith("?", self.pos):
            self.pos += 1
            if self.text.startswith(("P<", "<"), self.pos):
                self.pos = self.text.index(">", self.pos) + 1
            else:
                flags_end = min(i for i in (self.text.find(":", self.pos), self.text.find(")", self.pos)) if i != -1)
                flags = self.text[self.pos : flags_end]
                if flags and not flags.replace("-", "").isalpha():
                    raise _Unknown
                on, _, off = flags.partition("-")
                multiline = (multiline or "m" in on) and "m" not in off
                self.pos = flags_end + 1
                if self.text[flags_end] == ")":  # (?m) sets the flag for the rest of the enclosing group
                    self.multiline[-1] = multiline
                    return _FLAGS
        self.multiline.append(multiline)
        node = self._alternation()
        self.multiline.pop()
        if self._peek() != ")":
            raise _Unknown
        self.pos += 1
        return node

    def _escape(self) -> _Node:
        char = self.text[self.pos]
        self.pos += 1
        if char == "A":
            return _BEGIN
        if char == "z":
            return _END
        if char in ("b", "B"):
            return _PASS
        if char == "Q":
            end = self.text.find("\\E", self.pos)
            quoted = self.text[self.pos :] if end == -1 else self.text[self.pos : end]
            self.pos = len(self.text) if end == -1 else end + 2
            return _Node("group", (_CHAR,) * len(quoted), bare=True)  # a repetition after it repeats the last character
        self._skip_escape_argument(char)
        return _CHAR

    def _skip_escape_argument(self, char: str) -> None:
        """Move past ``\\p{Greek}``, ``\\pL``, ``\\x{263a}``, ``\\x41`` or ``\\123``."""
        if char in ("p", "P", "x") and self._peek() == "{":
            self.pos = self.text.index("}", self.pos) + 1
        elif char in ("p", "P"):
            self.pos += 1
        elif char == "x":
            self.pos += 2
        elif char.isdigit():
            while self._peek().isdigit():
                self.pos += 1

    def _class(self) -> _Node:
        negated = self._peek() == "^"
        if negated:
            self.pos += 1
        members: set[str] = set()
        first = True
        while first or self._peek() != "]":
            first = False
            if self.text.startswith("[:", self.pos):
                end = self.text.index(":]", self.pos + 2)
                members.add(self.text[self.pos : end + 2])
                self.pos = end + 2
            elif self.text[self.pos] == "\\":
                start = self.pos
                self.pos += 1
                char = self.text[self.pos]
                self.pos += 1
                self._skip_escape_argument(char)
                members.add(self.text[start : self.pos])
            else:
                self.pos += 1
        self.pos += 1
        return _NONE if negated and _covers_everything(members) else _CHAR


def _covers_everything(members: set[str]) -> bool:
    """A class member and its complement both listed (``\\s\\S``, ``\\pL\\PL``, ``[:digit:][:^digit:]``)."""
    for member in members:
        if len(member) == 2 and member[1] in _NEGATIONS and "\\" + _NEGATIONS[member[1]] in members:
            return True
        if member.startswith("\\p") and "\\P" + member[2:] in members:
            return True
        if member.startswith("[:") and not member.startswith("[:^") and "[:^" + member[2:] in members:
            return True
    return False

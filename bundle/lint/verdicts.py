"""What the scorecard makes of validators that can fail (issue 22 item 9).

The scorer's pass rules (engine/scoring/strategies.py, docs/scoring.md "When a case passes") are
replayed on the best case the pack allows: every validator passes except those that cannot
(bundle.lint.never_pass: one that never passes fails; of two that never pass together, either
one fails, whichever helps), and every other dimension (reliability, latency, judges…) scores 1.
A validators dimension then scores the share of its validators that pass. From that:

- a ``pass_threshold`` the scorer reads (a gate's, every dimension's under ``binary``, the
  scorecard's) that no score can reach is a warning on that threshold;
- when no case can pass at all for another reason (a weighted scorecard with no gate and no
  ``pass_threshold`` needs every validator to pass), one warning on the scorecard says so;
- otherwise, a validator whose failure alone leaves the case passing is lenient scoring, and a
  warning when the instructions make what it checks mandatory. Nothing says which sentence a
  validator checks, so we chose a plain rule: a clause of a challenge's instructions with must,
  required or mandatory (between commas, colons or semicolons) that shares a word with the
  validator's key (``does_not_escalate`` and "you must NOT escalate to a human"; words of four
  letters or more, compared on their first six, common words left out). One warning per pack,
  naming every such validator and the first clause.
"""

from __future__ import annotations

import dataclasses
import itertools
import re
from typing import Any

from bundle.lint.never_pass import Finding
from bundle.validate.common import Report
from bundle.validate.scorecard import expand_dimension

SPEC = "version.evaluation_spec"
CARD = f"{SPEC}.scorecard"
MANDATORY = re.compile(r"\b(must|required|mandatory)\b", re.IGNORECASE)
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"'`(\[])|\n\s*\n|\n\s*(?=[-*•]|\d+[.)])")
_CLAUSE = re.compile(r"[,;:()]")
_MARKER = re.compile(r"^(?:[-*•]|\d+[.)])\s*")
_WORD = re.compile(r"[a-z0-9]+")
# Words that say nothing about what a check is about.
_COMMON = frozenset(
    "must required mandatory with that this your from have into when than then they them will should also only each "
    "does final output correct valid check checks exactly answer".split()
)
MAX_CHOICES = 10  # pairs that never pass together: 2**10 scenarios at most, else no verdict
_SHOWN = 4


@dataclasses.dataclass(frozen=True, slots=True)
class _Dimension:
    index: int
    key: str
    members: tuple[str, ...] | None  # the validators it averages; None for other sources
    weight: float
    gate: bool
    threshold: float | None


@dataclasses.dataclass(frozen=True, slots=True)
class _Card:
    strategy: str
    threshold: float | None
    dimensions: tuple[_Dimension, ...]
    validators: tuple[str, ...]

    @property
    def implicit(self) -> bool:
        """Weighted with neither gate nor pass_threshold: every validator must pass."""
        return self.strategy == "weighted" and self.threshold is None and not any(d.gate for d in self.dimensions)

    def decides(self, dim: _Dimension) -> bool:
        """Whether the strategy reads this dimension's own pass_threshold."""
        return dim.threshold is not None and (dim.gate or self.strategy == "binary" or self.implicit)


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _card(spec: dict[str, Any], keys: list[str]) -> _Card | None:
    scorecard = spec.get("scorecard")
    if not isinstance(scorecard, dict) or not isinstance(scorecard.get("dimensions"), list):
        return None
    dims = []
    for i, raw in enumerate(scorecard["dimensions"]):
        if not isinstance(raw, (str, dict)):
            return None
        dim = expand_dimension(raw, spec)
        members = None
        if dim.get("source") == "validators":
            listed = dim.get("validators")
            members = tuple(v for v in listed if isinstance(v, str)) if isinstance(listed, list) and listed else tuple(keys)
            if not members:
                return None
        weight = _number(dim.get("weight"))
        dims.append(
            _Dimension(
                i,
                str(dim.get("key") or ""),
                members,
                1.0 if weight is None else weight,
                bool(dim.get("gate")),
                _number(dim.get("pass_threshold")),
            )
        )
    strategy = scorecard.get("strategy") or "weighted"
    if strategy not in ("weighted", "binary", "hybrid"):
        return None
    return _Card(strategy, _number(scorecard.get("pass_threshold")), tuple(dims), tuple(keys))


def _score(dim: _Dimension, failing: frozenset[str]) -> float:
    if dim.members is None:
        return 1.0
    return sum(member not in failing for member in dim.members) / len(dim.members)


def _mean(dims: list[_Dimension], failing: frozenset[str]) -> float:
    total = sum(max(0.0, d.weight) for d in dims)
    if total == 0:
        return sum(_score(d, failing) for d in dims) / len(dims)
    return sum(_score(d, failing) * max(0.0, d.weight) for d in dims) / total


_EVERY_VALIDATOR = "a weighted scorecard with no gate and no pass_threshold needs every validator to pass"


def _verdict(card: _Card, failing: frozenset[str]) -> str | None:
    """Why a case fails when exactly ``failing`` fail and all else is perfect; None if it passes."""
    if card.implicit and failing:
        return _EVERY_VALIDATOR
    for dim in card.dimensions:
        needed = dim.threshold if dim.threshold is not None else 1.0 if card.strategy == "binary" else None
        if (card.decides(dim) or card.strategy == "binary") and needed is not None and _score(dim, failing) < needed:
            return f'dimension "{dim.key}" then scores {_score(dim, failing):.3g}, below {needed:g}'
    if card.threshold is None or card.strategy == "binary":
        return None
    counted = [d for d in card.dimensions if not (card.strategy == "hybrid" and d.gate)]
    if counted and _mean(counted, failing) < card.threshold:
        return f"the score is then {_mean(counted, failing):.3g}, below the pass_threshold {card.threshold:g}"
    return None


def _scenarios(findings: list[Finding]) -> list[frozenset[str]]:
    """Each least set of validators that must fail together (one per way of settling the pairs)."""
    forced = frozenset(f.keys[0] for f in findings if len(f.keys) == 1)
    pairs = [f.keys for f in findings if len(f.keys) > 1 and not forced & set(f.keys)]
    if len(pairs) > MAX_CHOICES:
        return []
    return [forced | frozenset(choice) for choice in itertools.product(*pairs)]


def lint_verdicts(bundle: dict[str, Any], findings: list[Finding], report: Report) -> None:
    spec = (bundle.get("version") or {}).get("evaluation_spec") or {}
    validators = [v for v in spec.get("validators") or () if isinstance(v, dict)]
    keys = [k.strip() for v in validators if isinstance(k := v.get("key"), str) and k.strip()]
    card = _card(spec, keys)
    scenarios = _scenarios(findings)
    if card is None or not scenarios:
        return
    if findings and _unreachable_thresholds(card, scenarios, findings, report):
        return
    verdicts = {scenario: _verdict(card, scenario) for scenario in scenarios}
    passing = [s for s, why in verdicts.items() if why is None]
    if not passing:
        causes = "; ".join(f.reason for f in findings)
        report.add(CARD, f"no case of this pack can pass: {causes}, and {next(iter(verdicts.values()))}")
        return
    _lint_lenient(bundle, card, min(passing, key=len), report)


def _unreachable_thresholds(card: _Card, scenarios: list[frozenset[str]], findings: list[Finding], report: Report) -> bool:
    """Warn on each threshold the scorer reads that no scenario reaches; True if any was."""
    causes = "; ".join(f.reason for f in findings)
    found = False
    for dim in card.dimensions:
        if not card.decides(dim) or dim.threshold is None:
            continue
        best = max(_score(dim, s) for s in scenarios)
        if best < dim.threshold:
            own = "; ".join(f.reason for f in findings if set(f.keys) & set(dim.members or ())) or causes
            report.add(
                f"{CARD}.dimensions[{dim.index}].pass_threshold",
                f'no score can reach it: dimension "{dim.key}" scores at most {best:.3g} ({own}), so no case can pass',
            )
            found = True
    counted = [d for d in card.dimensions if not (card.strategy == "hybrid" and d.gate)]
    if card.threshold is not None and card.strategy != "binary" and counted:
        best = max(_mean(counted, s) for s in scenarios)
        if best < card.threshold:
            report.add(f"{CARD}.pass_threshold", f"no score can reach it: the score is at most {best:.3g} ({causes}), so no case can pass")
            found = True
    return found


def _stems(text: str) -> set[str]:
    """Content words of ``text`` cut to six letters (escalate, escalation and escalated meet)."""
    return {word[:6] for word in _WORD.findall(text.lower()) if len(word) >= 4 and word not in _COMMON}


def _mandatory_clauses(bundle: dict[str, Any]) -> list[tuple[str, str, set[str]]]:
    """``(challenge key, sentence, stems of its clause)`` for each instruction sentence with must,
    required or mandatory; the clause is the part between commas, colons or semicolons that holds
    the word ("you must NOT escalate to a human" in "Because …, you must NOT escalate to a human.")."""
    found = []
    for challenge in bundle.get("challenges") or ():
        text = challenge.get("instructions") if isinstance(challenge, dict) else None
        for sentence in _SENTENCE.split(text) if isinstance(text, str) else ():
            sentence = _MARKER.sub("", " ".join(sentence.split())).rstrip(".")
            for clause in _CLAUSE.split(sentence):
                if MANDATORY.search(clause):
                    shown = sentence if len(sentence) <= 120 else sentence[:117] + "…"
                    found.append((str(challenge.get("key") or ""), shown, _stems(clause)))
    return found


def _lenient_rule(card: _Card) -> str:
    """What decides a case instead of every validator, in words."""
    parts = [f'gate "{d.key}" at {d.threshold:g}' for d in card.dimensions if d.gate and d.threshold is not None]
    if card.strategy == "binary":
        parts = [f'"{d.key}" at {d.threshold if d.threshold is not None else 1:g}' for d in card.dimensions]
        return "binary dimensions pass at their thresholds: " + ", ".join(parts)
    if card.threshold is not None:
        parts.append(
            f"the score at the pass_threshold {card.threshold:g}"
            if card.strategy == "weighted"
            else (f"the other dimensions' score at the pass_threshold {card.threshold:g}")
        )
    elif card.strategy == "hybrid":
        parts.append("nothing else (no pass_threshold)")
    return f"{card.strategy} scorecard: the case passes on " + ", ".join(parts)


def _lint_lenient(bundle: dict[str, Any], card: _Card, base: frozenset[str], report: Report) -> None:
    """Validators whose failure alone leaves the case passing, and that a mandatory clause of the
    instructions talks about (a word of the validator's key in the clause)."""
    lenient = [key for key in card.validators if key not in base and _verdict(card, base | {key}) is None]
    clauses = _mandatory_clauses(bundle) if lenient else []
    named: list[str] = []
    said: tuple[str, str] | None = None
    for key in lenient:
        stems = _stems(key.replace("_", " ").replace("-", " "))
        match = next(((challenge, sentence) for challenge, sentence, words in clauses if stems & words), None)
        if match is not None:
            named.append(key)
            said = said or match
    if said is None:
        return
    names = ", ".join(f'"{k}"' for k in named[:_SHOWN]) + (f" and {len(named) - _SHOWN} more" if len(named) > _SHOWN else "")
    where = f"{CARD}.pass_threshold" if card.threshold is not None else f"{CARD}.strategy"
    report.add(
        where,
        f"validator{'s' if len(named) > 1 else ''} {names} can {'each ' if len(named) > 1 else ''}fail while the case still passes "
        f'({_lenient_rule(card)}), yet challenge "{said[0]}" makes it mandatory: "{said[1]}". For a mandatory check to fail the '
        "case, put its validator in a dimension with gate: true and pass_threshold: 1",
    )

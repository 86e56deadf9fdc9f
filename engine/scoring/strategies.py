"""Overall score and pass/fail: weighted, binary and hybrid strategies (runtime.md §5.7).

Deliberate differences from the reference (docs/scoring.md, "When a case passes"), applied when
the caller gives the case's facts (:class:`CaseFacts`): a case whose run did not complete never
passes, whatever the strategy; and a ``weighted`` scorecard that declares no gate and no
``pass_threshold`` — which the reference passes for any score, even 0 — passes a case only if
none of its available validators failed and every dimension that declares its own
``pass_threshold`` meets it.

Nothing evaluated is not a pass (issue 22): when every declared dimension is not applicable or
unavailable, the case has no overall score and ``passed`` is unknown (``None``) unless something
did fail it (the run did not complete, a validator failed, a required gate is missing); a
``hybrid`` scorecard whose gates pass but whose declared non-gate dimensions all do not apply has
no score either, rather than 1.0.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from engine.scoring.dimensions import DimensionScore


@dataclasses.dataclass
class Overall:
    score: float | None
    passed: bool | None
    reason: str
    low_confidence: bool = False  # a fail that rests on low-confidence judge dimensions alone


@dataclasses.dataclass(frozen=True)
class CaseFacts:
    """What the implicit pass rule reads besides the dimensions (see the module doc)."""

    run_completed: bool = True
    stop_reason: str | None = None
    available_validators: int = 0
    failed_validators: tuple[str, ...] = ()


def implicit_pass(dims: list[DimensionScore], facts: CaseFacts) -> tuple[bool | None, str]:
    """Pass/fail of a weighted scorecard with neither gates nor a pass threshold."""
    if not facts.run_completed:
        return False, f"the case run did not complete ({facts.stop_reason or 'failed'})"
    if facts.failed_validators:
        names = ", ".join(repr(k) for k in facts.failed_validators)
        return False, f"validator {names} failed (no gate or pass threshold is declared, so every validator must pass)"
    for dim in dims:
        if dim.pass_threshold is not None and dim.state == "available" and dim.score is not None and dim.score < dim.pass_threshold:
            return False, f"dimension {dim.key!r} scored {dim.score:.3f} below its threshold {dim.pass_threshold:g}"
    if not facts.available_validators and not any(d.pass_threshold is not None and d.state == "available" for d in dims):
        return None, "no validator or thresholded dimension could decide the case"
    return True, "every available validator passed"


def weighted_mean(dims: list[DimensionScore]) -> float | None:
    if not dims:
        return None
    total = sum(max(0.0, d.weight) for d in dims)
    if total == 0:
        return sum(d.score or 0.0 for d in dims) / len(dims)
    return sum((d.score or 0.0) * max(0.0, d.weight) for d in dims) / total


def _available(dims: list[DimensionScore]) -> list[DimensionScore]:
    return [d for d in dims if d.state == "available" and d.score is not None]


def _describe(dims: list[DimensionScore]) -> str:
    return "; ".join(f"{d.key!r} is {d.state}" + (f" ({d.reason})" if d.reason else "") for d in dims)


def _gate_problem(gates: list[DimensionScore]) -> str | None:
    for gate in gates:
        if gate.state != "available" or gate.score is None:
            return f"gate {gate.key!r} is {gate.state}"
        if gate.score < (gate.pass_threshold or 0.0):
            return f"gate {gate.key!r} scored {gate.score:.3f} below its threshold {gate.pass_threshold:g}"
    return None


def weighted(dims: list[DimensionScore], pass_threshold: float | None) -> Overall:
    available = _available(dims)
    gates = [d for d in dims if d.gate]
    if not available:
        gate_missing = any(g.state != "available" for g in gates)
        return Overall(None, False if gate_missing else None, "no dimension could be scored")
    score = weighted_mean(available)
    assert score is not None  # available is not empty
    problem = _gate_problem(gates)
    if problem:
        return Overall(score, False, problem)
    if pass_threshold is not None and score < pass_threshold:
        return Overall(score, False, f"score {score:.3f} is below the pass threshold {pass_threshold:g}")
    return Overall(score, True, "passed")


def binary(dims: list[DimensionScore], pass_threshold: float | None) -> Overall:
    if not _available(dims):
        return Overall(None, False, "no dimension could be scored")
    for dim in dims:
        if dim.state != "available" or dim.score is None:
            return Overall(0.0, False, f"dimension {dim.key!r} is {dim.state}")
        threshold = dim.pass_threshold if dim.pass_threshold is not None else 1.0
        if dim.score < threshold:
            return Overall(0.0, False, f"dimension {dim.key!r} scored {dim.score:.3f} below {threshold:g}")
    return Overall(1.0, True, "every dimension met its threshold")


def hybrid(dims: list[DimensionScore], pass_threshold: float | None) -> Overall:
    """Gates, then the weighted mean of the other dimensions. A dimension that does not apply takes
    no part; but when the scorecard declares non-gate dimensions and none of them applies, nothing
    decided the score: no score and no pass (1.0 only when the scorecard declares gates alone)."""
    applicable = [d for d in dims if d.state != "not_applicable"]
    gates = [d for d in applicable if d.gate]
    if not gates:
        return Overall(None, False, "hybrid strategy requires at least one gated dimension")
    problem = _gate_problem(gates)
    if problem:
        return Overall(0.0, False, problem)
    rest = [d for d in applicable if not d.gate]
    if not rest:
        skipped = [d for d in dims if not d.gate]
        if skipped:
            return Overall(None, None, "every gate passed, but nothing decided the score: " + _describe(skipped))
        return Overall(1.0, True, "every gate passed")
    available = _available(rest)
    if not available:
        return Overall(None, False, "no non-gate dimension could be scored")
    score = weighted_mean(available)
    assert score is not None  # available is not empty
    if pass_threshold is not None and score < pass_threshold:
        return Overall(score, False, f"score {score:.3f} is below the pass threshold {pass_threshold:g}")
    return Overall(score, True, "passed")


STRATEGIES: dict[str, Callable[[list[DimensionScore], float | None], Overall]] = {
    "weighted": weighted,
    "binary": binary,
    "hybrid": hybrid,
}


def nothing_evaluated(
    strategy: str, declared: list[DimensionScore], applicable: list[DimensionScore], implicit: bool, facts: CaseFacts | None
) -> Overall:
    """No declared dimension was scored (each is not applicable or unavailable): no score, and no
    pass by default. The case still fails when something did fail it: the run did not complete,
    a validator failed (implicit rule), or a dimension the strategy requires is missing (a gate;
    with ``binary``, any dimension)."""
    if facts is not None and not facts.run_completed:
        return Overall(None, False, f"the case run did not complete ({facts.stop_reason or 'failed'})")
    if implicit and facts is not None and facts.failed_validators:
        passed, reason = implicit_pass(applicable, facts)
        return Overall(None, passed, reason)
    required = [d for d in applicable if strategy == "binary" or d.gate]
    if required:
        kind = "gate" if required[0].gate else "dimension"
        return Overall(None, False, f"{kind} {required[0].key!r} is {required[0].state}")
    return Overall(None, None, "nothing was evaluated: " + _describe(declared))


_MISSING = ("unavailable", "error")


def _with(dims: list[DimensionScore], picked: list[int], score: float) -> list[DimensionScore]:
    chosen = set(picked)
    return [dataclasses.replace(d, state="available", score=score, low_confidence=False) if i in chosen else d for i, d in enumerate(dims)]


def _weighs(strategy: str, dim: DimensionScore) -> bool:
    return dim.gate or dim.weight > 0 or dim.pass_threshold is not None or strategy == "binary"


def overall(strategy: str, dims: list[DimensionScore], pass_threshold: float | None, facts: CaseFacts | None = None) -> Overall:
    """The case's verdict, and only the part of it the evidence decides (issue 22):

    - a dimension that could not be scored (a judge that failed, a harness gap) is tried at its
      worst (0) and its best (1): when the verdict differs, the case is **unscored** (no score,
      ``passed`` None), never passed on the dimensions that happen to be there;
    - a fail that turns into a pass when the low-confidence judge dimensions are at their best
      rests on weak evidence: ``low_confidence`` (gates warn on it, never fail).

    See :func:`verdict` for the verdict itself."""
    result = verdict(strategy, dims, pass_threshold, facts)
    missing = [i for i, d in enumerate(dims) if d.state in _MISSING and _weighs(strategy, d)]
    if missing and result.passed is not None and any(d.state == "available" for d in dims):
        worst = verdict(strategy, _with(dims, missing, 0.0), pass_threshold, facts)
        best = verdict(strategy, _with(dims, missing, 1.0), pass_threshold, facts)
        if worst.passed != best.passed:
            names = ", ".join(f"{dims[i].key!r} ({dims[i].state}: {dims[i].reason})" for i in missing)
            return Overall(None, None, f"unscored: the dimensions that could not be scored could decide the case: {names}")
        if result.passed != worst.passed:
            result = Overall(result.score, worst.passed, worst.reason)
    weak = [i for i, d in enumerate(dims) if d.state == "available" and d.low_confidence]
    if weak and result.passed is False:
        best = overall(strategy, _with(dims, weak, 1.0), pass_threshold, facts)
        if best.passed is not False:
            why = ", ".join(repr(dims[i].key) for i in weak)
            return dataclasses.replace(result, low_confidence=True, reason=f"{result.reason} (low-confidence judge evidence: {why})")
    return result


def verdict(strategy: str, dims: list[DimensionScore], pass_threshold: float | None, facts: CaseFacts | None = None) -> Overall:
    """The case's overall score and verdict. With ``facts``, a case whose run did not complete never
    passes, and a weighted scorecard that declares no gate and no pass threshold uses
    :func:`implicit_pass`; without ``facts``, the reference rule. Either way, a case none of whose
    declared dimensions was scored has no score and does not pass (:func:`nothing_evaluated`)."""
    declared = list(dims)
    declares_gates = any(d.gate for d in dims)
    # A dimension that does not apply to the case (state not_applicable) takes no part at all:
    # not in the mean, not as a gate, not as a missing required dimension.
    dims = [d for d in dims if d.state != "not_applicable"]
    fn = STRATEGIES.get(strategy)
    if fn is None:
        return Overall(None, None, f"unknown strategy {strategy!r}")
    implicit = facts is not None and strategy == "weighted" and not declares_gates and pass_threshold is None
    if declared and not _available(dims):
        return nothing_evaluated(strategy, declared, dims, implicit, facts)
    if implicit:
        assert facts is not None  # implicit needs the facts
        result = weighted(dims, None)
        passed, reason = implicit_pass(dims, facts)
        return Overall(result.score, passed, reason)
    if strategy == "binary":
        # Binary treats every dimension as required; a scorecard-level threshold is not allowed.
        pass_threshold = None
    # hybrid() sets not-applicable dimensions aside itself: it must know they were declared.
    result = fn(declared if strategy == "hybrid" else dims, pass_threshold)
    if facts is not None and not facts.run_completed and result.passed is not False:
        # The dimensions that could be scored may all look fine (a judge of a partial transcript,
        # a behavioural signal), but an agent that did not finish did not do what was asked.
        return Overall(result.score, False, f"the case run did not complete ({facts.stop_reason or 'failed'})")
    return result

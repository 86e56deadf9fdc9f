"""Overall score and pass/fail: weighted, binary and hybrid strategies (runtime.md §5.7).

Deliberate differences from the reference (docs/scoring.md, "When a case passes"), applied when
the caller gives the case's facts (:class:`CaseFacts`): a case whose run did not complete never
passes, whatever the strategy; and a ``weighted`` scorecard that declares no gate and no
``pass_threshold`` — which the reference passes for any score, even 0 — passes a case only if
none of its available validators failed and every dimension that declares its own
``pass_threshold`` meets it.
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
        return Overall(0.0, False, "no dimension could be scored")
    for dim in dims:
        if dim.state != "available" or dim.score is None:
            return Overall(0.0, False, f"dimension {dim.key!r} is {dim.state}")
        threshold = dim.pass_threshold if dim.pass_threshold is not None else 1.0
        if dim.score < threshold:
            return Overall(0.0, False, f"dimension {dim.key!r} scored {dim.score:.3f} below {threshold:g}")
    return Overall(1.0, True, "every dimension met its threshold")


def hybrid(dims: list[DimensionScore], pass_threshold: float | None) -> Overall:
    gates = [d for d in dims if d.gate]
    if not gates:
        return Overall(None, False, "hybrid strategy requires at least one gated dimension")
    problem = _gate_problem(gates)
    if problem:
        return Overall(0.0, False, problem)
    rest = [d for d in dims if not d.gate]
    if not rest:
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


def overall(strategy: str, dims: list[DimensionScore], pass_threshold: float | None, facts: CaseFacts | None = None) -> Overall:
    """The case's overall score and verdict. With ``facts``, a case whose run did not complete never
    passes, and a weighted scorecard that declares no gate and no pass threshold uses
    :func:`implicit_pass`; without ``facts``, the reference rule."""
    declares_gates = any(d.gate for d in dims)
    # A dimension that does not apply to the case (state not_applicable) takes no part at all:
    # not in the mean, not as a gate, not as a missing required dimension.
    dims = [d for d in dims if d.state != "not_applicable"]
    if facts is not None and strategy == "weighted" and not declares_gates and pass_threshold is None:
        result = weighted(dims, None)
        passed, reason = implicit_pass(dims, facts)
        return Overall(result.score, passed, reason)
    if strategy == "binary":
        # Binary treats every dimension as required; a scorecard-level threshold is not allowed.
        pass_threshold = None
    fn = STRATEGIES.get(strategy)
    if fn is None:
        return Overall(None, None, f"unknown strategy {strategy!r}")
    result = fn(dims, pass_threshold)
    if facts is not None and not facts.run_completed and result.passed is not False:
        # The dimensions that could be scored may all look fine (a judge of a partial transcript,
        # a behavioural signal), but an agent that did not finish did not do what was asked.
        return Overall(result.score, False, f"the case run did not complete ({facts.stop_reason or 'failed'})")
    return result

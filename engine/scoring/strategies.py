"""Overall score and pass/fail: weighted, binary and hybrid strategies (runtime.md §5.7)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from engine.scoring.dimensions import DimensionScore

JSON = Any


@dataclasses.dataclass
class Overall:
    score: float | None
    passed: bool | None
    reason: str


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


def overall(strategy: str, dims: list[DimensionScore], pass_threshold: float | None) -> Overall:
    # A dimension that does not apply to the case (state not_applicable) takes no part at all:
    # not in the mean, not as a gate, not as a missing required dimension.
    dims = [d for d in dims if d.state != "not_applicable"]
    if strategy == "binary":
        # Binary treats every dimension as required; a scorecard-level threshold is not allowed.
        pass_threshold = None
    fn = STRATEGIES.get(strategy)
    if fn is None:
        return Overall(None, None, f"unknown strategy {strategy!r}")
    return fn(dims, pass_threshold)

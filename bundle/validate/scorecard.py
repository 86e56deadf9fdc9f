"""``evaluation_spec.scorecard`` (spec §4.8) including legacy dimension expansion.

One function per rule group. ``validate_scorecard`` runs them in the spec's order, which is
the order errors are reported in (part of the public contract, like the messages).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from bundle.validate.common import Report

P = "version.evaluation_spec"
SOURCES = ("validators", "metric", "reliability", "latency", "cost", "behavioral", "llm_judge", "human_preference")
_SOURCE_MESSAGE = "must be one of validators, metric, reliability, latency, cost, behavioral, llm_judge"
_BUILTIN_SOURCES = {
    "correctness": ("validators", "higher"),
    "reliability": ("reliability", "higher"),
    "latency": ("latency", "lower"),
    "cost": ("cost", "lower"),
    "behavioral": ("behavioral", "higher"),
}
_HIGHER_DEFAULT = ("validators", "reliability", "behavioral", "llm_judge")
_HIGHER_ONLY = ("llm_judge", "behavioral", "validators", "reliability")
_NORMALISED = ("metric", "latency", "cost")
# Legacy ``scorecard.normalization`` block → (runtime_limits fallback for max, target key, max key).
_LEGACY_NORMALIZATION = {
    "latency": ("max_duration_ms", "target_ms", "max_ms"),
    "cost": ("max_cost_usd", "target_usd", "max_usd"),
}


def expand_dimension(dimension: Any, spec: dict[str, Any]) -> dict[str, Any]:
    """Load-time expansion of a (possibly legacy string) dimension; does not mutate input."""
    dim: dict[str, Any] = {"key": dimension, "source": ""} if isinstance(dimension, str) else dict(dimension)
    key = (dim.get("key") or "").strip()
    source = (dim.get("source") or "").strip()
    if not source and key in _BUILTIN_SOURCES:
        source, direction = _BUILTIN_SOURCES[key]
        dim["source"] = source
        if not dim.get("better_direction"):
            dim["better_direction"] = direction
        if source in _LEGACY_NORMALIZATION and "normalization" not in dim:
            norm = _legacy_normalization(source, spec)
            if norm is not None:
                dim["normalization"] = norm
    elif source in _HIGHER_DEFAULT and not dim.get("better_direction"):
        dim["better_direction"] = "higher"
    dim["source"] = source
    return dim


def _legacy_normalization(source: str, spec: dict[str, Any]) -> dict[str, Any] | None:
    block = ((spec.get("scorecard") or {}).get("normalization") or {}).get(source)
    if block is None:
        return None
    fallback_key, target, maximum = _LEGACY_NORMALIZATION[source]
    fallback = (spec.get("runtime_limits") or {}).get(fallback_key)
    norm: dict[str, Any] = {}
    if target in block:
        norm["target"] = block[target]
    if maximum in block:
        norm["max"] = block[maximum]
    elif fallback is not None:
        norm["max"] = fallback
    return norm


@dataclasses.dataclass(slots=True)
class _Scope:
    """What the dimension rules read, and the behavioral error that is reported once per scorecard."""

    spec: dict[str, Any]
    strategy: str
    validator_keys: set[str]
    metric_keys: set[str]
    judge_keys: set[str]
    report: Report
    behavioral_reported: bool = False


def validate_scorecard(
    spec: dict[str, Any],
    validator_keys: set[str],
    metric_keys: set[str],
    judge_keys: set[str],
    report: Report,
) -> None:
    scorecard = spec.get("scorecard") or {}
    base = f"{P}.scorecard"
    dimensions = scorecard.get("dimensions") or []
    if not dimensions:
        report.add(f"{base}.dimensions", "must contain at least one dimension")
    strategy = scorecard.get("strategy") or "weighted"
    if strategy not in ("weighted", "binary", "hybrid"):
        report.add(f"{base}.strategy", "must be one of weighted, binary, hybrid")
    scope = _Scope(spec, strategy, validator_keys, metric_keys, judge_keys, report)
    gated = _check_dimensions(dimensions, base, scope)
    _check_overall_threshold(scorecard.get("pass_threshold"), strategy, base, report)
    if strategy == "hybrid" and not gated:
        report.add(f"{base}.strategy", "hybrid strategy requires at least one gated dimension")
    _check_judge_limits(scorecard.get("judge_limits") or {}, base, report)


def _check_dimensions(dimensions: list[Any], base: str, scope: _Scope) -> bool:
    """Every dimension's rules; True when a checked dimension is gated (duplicates are skipped)."""
    seen: set[str] = set()
    gated = False
    for i, raw in enumerate(dimensions):
        field = f"{base}.dimensions[{i}]"
        dim = expand_dimension(raw, scope.spec)
        key = (dim.get("key") or "").strip()
        if not key:
            scope.report.add(f"{field}.key", "is required")
        elif key in seen:
            scope.report.add(field, "must be unique")
            continue
        seen.add(key)
        gated = gated or bool(dim.get("gate"))
        _check_dimension(dim, field, scope)
    return gated


def _check_dimension(dim: dict[str, Any], field: str, scope: _Scope) -> None:
    report = scope.report
    source: str = dim["source"]
    direction: str = dim.get("better_direction") or ""
    if source not in SOURCES:
        report.add(f"{field}.source", _SOURCE_MESSAGE)
    elif source in _SOURCE_RULES:
        _SOURCE_RULES[source](dim, field, scope)
    _check_direction(source, direction, field, report)
    if source != "llm_judge" and (dim.get("judge_key") or "").strip():
        report.add(f"{field}.judge_key", "must be empty unless source is llm_judge")
    if source in _NORMALISED:
        _check_normalization(dim.get("normalization"), source, direction, field, report)
    weight = dim.get("weight")
    if weight is not None and weight < 0:
        report.add(f"{field}.weight", "must be greater than or equal to 0")
    _check_dimension_threshold(dim, scope.strategy, field, report)


def _check_validators_source(dim: dict[str, Any], field: str, scope: _Scope) -> None:
    for j, name in enumerate(dim.get("validators") or ()):
        if name not in scope.validator_keys:
            scope.report.add(f"{field}.validators[{j}]", f'references unknown validator key "{name}"')


def _check_metric_source(dim: dict[str, Any], field: str, scope: _Scope) -> None:
    _check_reference(dim, "metric", "metric", scope.metric_keys, f"{field}.metric", scope.report)


def _check_llm_judge_source(dim: dict[str, Any], field: str, scope: _Scope) -> None:
    _check_reference(dim, "judge_key", "judge", scope.judge_keys, f"{field}.judge_key", scope.report)


def _check_reference(dim: dict[str, Any], name: str, kind: str, known: set[str], field: str, report: Report) -> None:
    value = (dim.get(name) or "").strip()
    if not value:
        report.add(field, f"is required when source is {dim['source']}")
    elif value not in known:
        report.add(field, f'references unknown {kind} key "{value}"')


def _check_behavioral_source(dim: dict[str, Any], field: str, scope: _Scope) -> None:
    if scope.spec.get("behavioral") is None and not scope.behavioral_reported:
        scope.report.add(f"{P}.behavioral", "is required when a scorecard dimension uses source behavioral")
        scope.behavioral_reported = True


_SOURCE_RULES: dict[str, Callable[[dict[str, Any], str, _Scope], None]] = {
    "validators": _check_validators_source,
    "metric": _check_metric_source,
    "behavioral": _check_behavioral_source,
    "llm_judge": _check_llm_judge_source,
}


def _check_direction(source: str, direction: str, field: str, report: Report) -> None:
    if source in _HIGHER_ONLY and direction and direction != "higher":
        report.add(f"{field}.better_direction", f'must be "higher" for {source} source (got "{direction}")')
    elif source in _NORMALISED and direction not in ("higher", "lower"):
        report.add(f"{field}.better_direction", "must be higher or lower")


def _check_normalization(norm: dict[str, Any] | None, source: str, direction: str, field: str, report: Report) -> None:
    if norm is None:
        report.add(f"{field}.normalization", f"is required when source is {source}")
        return
    target, maximum = norm.get("target"), norm.get("max")
    if target is None:
        report.add(f"{field}.normalization.target", "is required")
    if maximum is None:
        report.add(f"{field}.normalization.max", "is required")
    if target is None or maximum is None:
        return
    if direction == "lower" and maximum <= target:
        report.add(f"{field}.normalization.max", "must be greater than target when better_direction is lower")
    elif direction == "higher" and maximum >= target:
        report.add(f"{field}.normalization.max", "must be less than target when better_direction is higher")


def _check_dimension_threshold(dim: dict[str, Any], strategy: str, field: str, report: Report) -> None:
    threshold = dim.get("pass_threshold")
    if threshold is None:
        if dim.get("gate") or strategy == "binary":
            report.add(f"{field}.pass_threshold", "is required when the dimension is gated or strategy is binary")
    elif not 0 <= threshold <= 1:
        report.add(f"{field}.pass_threshold", "must be between 0 and 1")


def _check_overall_threshold(threshold: float | None, strategy: str, base: str, report: Report) -> None:
    if threshold is None:
        return
    if strategy == "binary":
        report.add(f"{base}.pass_threshold", "must not be set for binary strategy; use per-dimension pass_threshold instead")
    elif not 0 <= threshold <= 1:
        report.add(f"{base}.pass_threshold", "must be between 0 and 1")


def _check_judge_limits(limits: dict[str, Any], base: str, report: Report) -> None:
    samples = limits.get("max_samples_per_judge")
    if samples is not None and not 0 <= samples <= 10:
        report.add(f"{base}.judge_limits.max_samples_per_judge", "must be between 0 and 10")
    for key in ("max_calls_usd", "max_tokens"):
        if (limits.get(key) or 0) < 0:
            report.add(f"{base}.judge_limits.{key}", "must be greater than or equal to 0")

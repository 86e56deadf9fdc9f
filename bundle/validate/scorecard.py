"""``evaluation_spec.scorecard`` (spec §4.8) including legacy dimension expansion."""

from __future__ import annotations

from typing import Any

from bundle.validate.common import Report

P = "version.evaluation_spec"
SOURCES = ("validators", "metric", "reliability", "latency", "cost", "behavioral", "llm_judge", "human_preference")
_BUILTIN_SOURCES = {
    "correctness": ("validators", "higher"),
    "reliability": ("reliability", "higher"),
    "latency": ("latency", "lower"),
    "cost": ("cost", "lower"),
    "behavioral": ("behavioral", "higher"),
}
_HIGHER_DEFAULT = ("validators", "reliability", "behavioral", "llm_judge")


def expand_dimension(dimension: Any, spec: dict[str, Any]) -> dict[str, Any]:
    """Load-time expansion of a (possibly legacy string) dimension; does not mutate input."""
    dim = {"key": dimension, "source": ""} if isinstance(dimension, str) else dict(dimension)
    key = (dim.get("key") or "").strip()
    source = (dim.get("source") or "").strip()
    if not source and key in _BUILTIN_SOURCES:
        source, direction = _BUILTIN_SOURCES[key]
        dim["source"] = source
        if not dim.get("better_direction"):
            dim["better_direction"] = direction
        legacy = (spec.get("scorecard") or {}).get("normalization") or {}
        limits = spec.get("runtime_limits") or {}
        if source in ("latency", "cost") and "normalization" not in dim:
            if source == "latency":
                block, fallback = legacy.get("latency"), limits.get("max_duration_ms")
                target, maximum = "target_ms", "max_ms"
            else:
                block, fallback = legacy.get("cost"), limits.get("max_cost_usd")
                target, maximum = "target_usd", "max_usd"
            if block is not None:
                norm: dict[str, Any] = {}
                if target in block:
                    norm["target"] = block[target]
                if maximum in block:
                    norm["max"] = block[maximum]
                elif fallback is not None:
                    norm["max"] = fallback
                dim["normalization"] = norm
    elif source in _HIGHER_DEFAULT and not dim.get("better_direction"):
        dim["better_direction"] = "higher"
    dim["source"] = source
    return dim


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
    seen: set[str] = set()
    gated = False
    behavioral_reported = False
    for i, raw in enumerate(dimensions):
        field = f"{base}.dimensions[{i}]"
        dim = expand_dimension(raw, spec)
        key = (dim.get("key") or "").strip()
        if not key:
            report.add(f"{field}.key", "is required")
        elif key in seen:
            report.add(field, "must be unique")
            continue
        seen.add(key)
        if dim.get("gate"):
            gated = True
        source = dim["source"]
        direction = dim.get("better_direction") or ""
        if source not in SOURCES:
            report.add(
                f"{field}.source",
                "must be one of validators, metric, reliability, latency, cost, behavioral, llm_judge",
            )
        elif source == "validators":
            for j, name in enumerate(dim.get("validators") or ()):
                if name not in validator_keys:
                    report.add(f"{field}.validators[{j}]", f'references unknown validator key "{name}"')
        elif source == "metric":
            metric = (dim.get("metric") or "").strip()
            if not metric:
                report.add(f"{field}.metric", "is required when source is metric")
            elif metric not in metric_keys:
                report.add(f"{field}.metric", f'references unknown metric key "{metric}"')
        elif source == "behavioral" and spec.get("behavioral") is None and not behavioral_reported:
            report.add(f"{P}.behavioral", "is required when a scorecard dimension uses source behavioral")
            behavioral_reported = True
        elif source == "llm_judge":
            judge_key = (dim.get("judge_key") or "").strip()
            if not judge_key:
                report.add(f"{field}.judge_key", "is required when source is llm_judge")
            elif judge_key not in judge_keys:
                report.add(f"{field}.judge_key", f'references unknown judge key "{judge_key}"')

        if source in ("llm_judge", "behavioral", "validators", "reliability"):
            if direction and direction != "higher":
                report.add(
                    f"{field}.better_direction",
                    f'must be "higher" for {source} source (got "{direction}")',
                )
        elif source in ("metric", "latency", "cost"):
            if direction not in ("higher", "lower"):
                report.add(f"{field}.better_direction", "must be higher or lower")
        if source != "llm_judge" and (dim.get("judge_key") or "").strip():
            report.add(f"{field}.judge_key", "must be empty unless source is llm_judge")

        if source in ("metric", "latency", "cost"):
            _validate_normalization(dim, source, direction, field, report)
        weight = dim.get("weight")
        if weight is not None and weight < 0:
            report.add(f"{field}.weight", "must be greater than or equal to 0")
        threshold = dim.get("pass_threshold")
        if threshold is None:
            if dim.get("gate") or strategy == "binary":
                report.add(
                    f"{field}.pass_threshold",
                    "is required when the dimension is gated or strategy is binary",
                )
        elif not 0 <= threshold <= 1:
            report.add(f"{field}.pass_threshold", "must be between 0 and 1")

    threshold = scorecard.get("pass_threshold")
    if threshold is not None:
        if strategy == "binary":
            report.add(
                f"{base}.pass_threshold",
                "must not be set for binary strategy; use per-dimension pass_threshold instead",
            )
        elif not 0 <= threshold <= 1:
            report.add(f"{base}.pass_threshold", "must be between 0 and 1")
    if strategy == "hybrid" and not gated:
        report.add(f"{base}.strategy", "hybrid strategy requires at least one gated dimension")

    limits = scorecard.get("judge_limits") or {}
    samples = limits.get("max_samples_per_judge")
    if samples is not None and not 0 <= samples <= 10:
        report.add(f"{base}.judge_limits.max_samples_per_judge", "must be between 0 and 10")
    for key in ("max_calls_usd", "max_tokens"):
        if (limits.get(key) or 0) < 0:
            report.add(f"{base}.judge_limits.{key}", "must be greater than or equal to 0")


def _validate_normalization(dim: dict[str, Any], source: str, direction: str, field: str, report: Report) -> None:
    norm = dim.get("normalization")
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

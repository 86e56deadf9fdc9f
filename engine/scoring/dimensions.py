"""Scorecard dimensions (runtime.md §5.6). Every score is normalised so that higher is better."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from engine.scoring import signals
from engine.scoring.documents import BehavioralSignalResult, CaseDimension, JudgeResult
from engine.scoring.metrics import MetricContext, MetricResult, MetricUnavailable
from engine.scoring.spec import DimensionDeclaration, EvaluationSpec, Normalization

LEGACY = {
    "correctness": ("validators", "higher"),
    "reliability": ("reliability", "higher"),
    "latency": ("latency", "lower"),
    "cost": ("cost", "lower"),
    "behavioral": ("behavioral", "higher"),
}
FIXED_HIGHER = {"validators", "reliability", "behavioral", "llm_judge", "human_preference"}
SOURCES = FIXED_HIGHER | {"metric", "latency", "cost"}


@dataclasses.dataclass
class DimensionSpec:
    key: str
    source: str
    validators: list[str] = dataclasses.field(default_factory=list)
    metric: str | None = None
    better_direction: str = "higher"
    normalization: Normalization | None = None
    weight: float = 1.0
    judge_key: str | None = None
    gate: bool = False
    pass_threshold: float | None = None


@dataclasses.dataclass
class DimensionScore:
    key: str
    source: str
    state: str  # available | unavailable | not_applicable | error
    score: float | None
    reason: str
    weight: float
    gate: bool
    pass_threshold: float | None
    declared_direction: str
    better_direction: str = "higher"  # after normalisation every score is higher-is-better
    raw_value: float | None = None
    # An LLM judge's score whose result has confidence "low" (models or samples disagree, calls
    # failed): a verdict that rests on it alone is weak evidence (strategies.overall).
    low_confidence: bool = False

    def as_dict(self) -> CaseDimension:
        return {
            "key": self.key,
            "source": self.source,
            "state": self.state,
            "score": self.score,
            "reason": self.reason,
            "weight": self.weight,
            "gate": self.gate,
            "pass_threshold": self.pass_threshold,
            "declared_direction": self.declared_direction,
            "better_direction": self.better_direction,
            "raw_value": self.raw_value,
            "low_confidence": self.low_confidence,
        }


def _number(value: object) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def expand(evaluation_spec: EvaluationSpec) -> list[DimensionSpec]:
    scorecard = evaluation_spec.get("scorecard") or {}
    legacy_norm = scorecard.get("normalization") or {}
    limits = evaluation_spec.get("runtime_limits") or {}
    out: list[DimensionSpec] = []
    for raw in scorecard.get("dimensions") or []:
        decl: DimensionDeclaration = {"key": raw} if isinstance(raw, str) else (raw if isinstance(raw, dict) else {})
        key = str(decl.get("key") or "")
        source = decl.get("source") or LEGACY.get(key, ("", ""))[0]
        direction = decl.get("better_direction") or (
            LEGACY[key][1] if key in LEGACY and not decl.get("source") else "higher" if source in FIXED_HIGHER else ""
        )
        normalization = decl.get("normalization")
        if normalization is None and source == "latency":
            latency = legacy_norm.get("latency") or {}
            normalization = {"target": latency.get("target_ms"), "max": latency.get("max_ms", limits.get("max_duration_ms"))}
        if normalization is None and source == "cost":
            cost = legacy_norm.get("cost") or {}
            normalization = {"target": cost.get("target_usd"), "max": cost.get("max_usd", limits.get("max_cost_usd"))}
        weight = _number(decl.get("weight"))
        out.append(
            DimensionSpec(
                key=key,
                source=str(source),
                validators=list(decl.get("validators") or []),
                metric=decl.get("metric"),
                better_direction=str(direction),
                normalization=normalization,
                weight=1.0 if weight is None else weight,
                judge_key=decl.get("judge_key"),
                gate=bool(decl.get("gate")),
                pass_threshold=_number(decl.get("pass_threshold")),
            )
        )
    return out


class DimensionError(Exception):
    pass


class NotApplicable(Exception):
    """The dimension does not apply to this case (a judge of a mismatch that never happened)."""


def normalise(value: float, direction: str, normalization: Normalization | None) -> float:
    target = _number((normalization or {}).get("target"))
    limit = _number((normalization or {}).get("max"))
    if target is None or limit is None:
        raise DimensionError("normalization needs target and max")
    if direction == "lower":
        if limit <= target:
            raise DimensionError("normalization.max must be greater than target when better_direction is lower")
        if value <= target:
            return 1.0
        return 0.0 if value >= limit else (limit - value) / (limit - target)
    if direction == "higher":
        if limit >= target:
            raise DimensionError("normalization.max must be less than target when better_direction is higher")
        if value >= target:
            return 1.0
        return 0.0 if value <= limit else (value - limit) / (target - limit)
    raise DimensionError(f"better_direction must be higher or lower (got {direction!r})")


@dataclasses.dataclass
class DimensionInputs:
    ctx: MetricContext
    metrics: list[MetricResult]
    judge_results: dict[str, JudgeResult]
    human_preferences: dict[str, float]


def behavioral_score(evaluation_spec: EvaluationSpec, inputs: DimensionInputs) -> tuple[float, list[BehavioralSignalResult]]:
    block = evaluation_spec.get("behavioral") or {}
    declared = block.get("signals") if isinstance(block, dict) else None
    if not declared:
        raise DimensionError("evaluation_spec.behavioral.signals is required for a behavioral dimension")
    details: list[BehavioralSignalResult] = []
    total, weights, vetoed = 0.0, 0.0, False
    for signal in declared:
        key = signal.get("key")
        fn = signals.SIGNALS.get(key) if isinstance(key, str) else None
        if key is None or fn is None:
            raise DimensionError(f"behavioral signal {key!r} is not supported")
        score = fn(inputs.ctx.extracted)
        weight = _number(signal.get("weight")) or 1.0
        threshold = _number(signal.get("pass_threshold"))
        passed = None if not signal.get("gate") else score >= (threshold or 0.0)
        vetoed = vetoed or passed is False
        total, weights = total + score * weight, weights + weight
        details.append(
            {"key": key, "score": score, "weight": weight, "gate": bool(signal.get("gate")), "pass_threshold": threshold, "passed": passed}
        )
    return (0.0 if vetoed else total / weights), details


def _validators_score(dim: DimensionSpec, inputs: DimensionInputs) -> tuple[float, str]:
    results = inputs.ctx.validators
    if dim.validators:
        by_key = {v.key: v for v in results}
        unknown = [k for k in dim.validators if k not in by_key]
        if unknown:
            raise DimensionError(f"unknown validator {unknown[0]!r}")
        results = [by_key[k] for k in dim.validators]
    if not results:
        raise DimensionError("no validators to score")
    errored = [v.key for v in results if v.state == "error"]
    if errored:
        raise DimensionError(f"validator {errored[0]!r} errored")
    missing = [v.key for v in results if v.state != "available"]
    if missing:
        raise MetricUnavailable(f"validator {missing[0]!r} is unavailable")
    score = sum(v.normalized_score or 0.0 for v in results) / len(results)
    return score, f"{sum(v.verdict == 'pass' for v in results)}/{len(results)} validators passed"


_Scored = tuple[float, str, float | None]


def _score_validators(evaluation_spec: EvaluationSpec, dim: DimensionSpec, inputs: DimensionInputs) -> _Scored:
    score, reason = _validators_score(dim, inputs)
    return score, reason, None


def _score_reliability(evaluation_spec: EvaluationSpec, dim: DimensionSpec, inputs: DimensionInputs) -> _Scored:
    # Computed from evidence even when the two metrics are not declared (see docs/scoring.md).
    extracted = inputs.ctx.extracted
    if bool(extracted.completed) and extracted.failure_count == 0:
        return 1.0, "completed without failures", None
    return 0.0, f"completed={str(bool(extracted.completed)).lower()}, failures={extracted.failure_count}", None


def _score_latency_or_cost(evaluation_spec: EvaluationSpec, dim: DimensionSpec, inputs: DimensionInputs) -> _Scored:
    raw = inputs.ctx.latency_ms() if dim.source == "latency" else inputs.ctx.cost_usd()
    score = normalise(raw, dim.better_direction, dim.normalization)
    return score, f"{dim.source} {raw:g}{' ms' if dim.source == 'latency' else ' USD'}", raw


def _score_metric(evaluation_spec: EvaluationSpec, dim: DimensionSpec, inputs: DimensionInputs) -> _Scored:
    metric = next((m for m in inputs.metrics if m.key == dim.metric), None)
    if metric is None:
        raise DimensionError(f"unknown metric {dim.metric!r}")
    if metric.state == "error":
        raise DimensionError(f"metric {metric.key!r} errored: {metric.reason}")
    if metric.state != "available" or metric.numeric_value is None:
        raise MetricUnavailable(f"metric {metric.key!r} is unavailable {metric.reason}".strip())
    raw = metric.numeric_value
    return normalise(raw, dim.better_direction, dim.normalization), f"{metric.key} = {raw:g}", raw


def _score_behavioral(evaluation_spec: EvaluationSpec, dim: DimensionSpec, inputs: DimensionInputs) -> _Scored:
    score, details = behavioral_score(evaluation_spec, inputs)
    return score, ", ".join(f"{d['key']}={d['score']:.2f}" for d in details), None


def _score_llm_judge(evaluation_spec: EvaluationSpec, dim: DimensionSpec, inputs: DimensionInputs) -> _Scored:
    judge = inputs.judge_results.get(dim.judge_key or "")
    if judge is None:
        raise MetricUnavailable(f"judge {dim.judge_key!r} has no result")
    if judge.get("state") == "not_applicable":
        raise NotApplicable(f"judge {dim.judge_key!r} {judge.get('reason', 'does not apply')}")
    score = judge.get("normalized_score")
    if score is None:
        raise MetricUnavailable(f"judge {dim.judge_key!r} has no score: {judge.get('reason', '')}")
    return float(score), f"judge {dim.judge_key} ({judge.get('confidence')})", None


def _score_human_preference(evaluation_spec: EvaluationSpec, dim: DimensionSpec, inputs: DimensionInputs) -> _Scored:
    if dim.key not in inputs.human_preferences:
        raise MetricUnavailable("no human preference recorded")
    return float(inputs.human_preferences[dim.key]), "human preference", None


_SOURCES: dict[str, Callable[[EvaluationSpec, DimensionSpec, DimensionInputs], _Scored]] = {
    "validators": _score_validators,
    "reliability": _score_reliability,
    "latency": _score_latency_or_cost,
    "cost": _score_latency_or_cost,
    "metric": _score_metric,
    "behavioral": _score_behavioral,
    "llm_judge": _score_llm_judge,
    "human_preference": _score_human_preference,
}


def score_dimension(evaluation_spec: EvaluationSpec, dim: DimensionSpec, inputs: DimensionInputs) -> DimensionScore:
    result = DimensionScore(
        key=dim.key,
        source=dim.source,
        state="error",
        score=None,
        reason="",
        weight=dim.weight,
        gate=dim.gate,
        pass_threshold=dim.pass_threshold,
        declared_direction=dim.better_direction,
    )
    try:
        scorer = _SOURCES.get(dim.source)
        if scorer is None:
            raise DimensionError(f"dimension {dim.key!r} has no supported source")
        score, reason, raw = scorer(evaluation_spec, dim, inputs)
    except MetricUnavailable as exc:
        result.state, result.reason = "unavailable", str(exc)
        return result
    except NotApplicable as exc:
        result.state, result.reason = "not_applicable", str(exc)
        return result
    except DimensionError as exc:
        result.reason = str(exc)
        return result
    except Exception as exc:  # noqa: BLE001 — scoring never raises
        result.reason = f"{type(exc).__name__}: {exc}"
        return result
    result.state, result.score, result.reason, result.raw_value = "available", min(1.0, max(0.0, score)), reason, raw
    if dim.source == "llm_judge":
        judge = inputs.judge_results.get(dim.judge_key or "")
        result.low_confidence = judge is not None and judge.get("confidence") == "low"
    return result

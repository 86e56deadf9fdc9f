"""Metric collectors (runtime.md §5.5). Each collector returns a value or raises ``MetricUnavailable``."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from engine.scoring import signals
from engine.scoring.documents import MetricDetail
from engine.scoring.evidence import CaseEvidence, Extracted
from engine.scoring.pricing import CostResult, model_cost
from engine.scoring.spec import EvaluationSpec, MetricDeclaration, ModelPrice
from engine.scoring.validators import ValidatorResult
from engine.scoring.validators.base import copied
from engine.types import JSON


class MetricUnavailable(Exception):
    pass


@dataclasses.dataclass
class MetricContext:
    spec: EvaluationSpec
    evidence: CaseEvidence
    extracted: Extracted
    validators: list[ValidatorResult]
    workspace_prices: list[ModelPrice] = dataclasses.field(default_factory=list)  # operator price rows

    def latency_ms(self) -> float:
        latency = self.extracted.latency_ms
        if latency is None:
            latency = self.evidence.duration_ms
        if latency is None:
            raise MetricUnavailable("run start or terminal time is missing")
        return float(latency)

    def cost(self) -> CostResult:
        return model_cost(self.spec, self.extracted, self.evidence.model, workspace_prices=self.workspace_prices)

    def cost_usd(self) -> float:
        result = self.cost()
        if result.cost_usd is None:
            raise MetricUnavailable(result.reason)
        return result.cost_usd


@dataclasses.dataclass
class MetricResult:
    key: str
    type: str
    collector: str
    unit: str | None
    state: str  # available | unavailable | error
    value: JSON = None
    numeric_value: float | None = None
    boolean_value: bool | None = None
    text_value: str | None = None
    reason: str = ""

    def as_dict(self) -> MetricDetail:
        return {
            "key": self.key,
            "type": self.type,
            "collector": self.collector,
            "unit": self.unit,
            "state": self.state,
            "value": copied(self.value),
            "numeric_value": self.numeric_value,
            "boolean_value": self.boolean_value,
            "text_value": self.text_value,
            "reason": self.reason,
        }


def _ttft(ctx: MetricContext) -> float:
    if ctx.extracted.ttft_ms is None:
        raise MetricUnavailable("no output time recorded")
    return ctx.extracted.ttft_ms


def _validator_pass_rate(ctx: MetricContext) -> float:
    if not ctx.validators:
        raise MetricUnavailable("no validators")
    missing = [v.key for v in ctx.validators if v.state != "available"]
    if missing:
        raise MetricUnavailable(f"validator {missing[0]!r} has no score")
    return sum(v.normalized_score or 0.0 for v in ctx.validators) / len(ctx.validators)


def _signal(name: str) -> Callable[[MetricContext], float]:
    return lambda ctx: signals.SIGNALS[name](ctx.extracted)


COLLECTORS: dict[str, Callable[[MetricContext], JSON]] = {
    "run_total_latency_ms": MetricContext.latency_ms,
    "run_ttft_ms": _ttft,
    "run_input_tokens": lambda ctx: ctx.extracted.input_tokens,
    "run_output_tokens": lambda ctx: ctx.extracted.output_tokens,
    "run_total_tokens": lambda ctx: ctx.extracted.total_tokens,
    "run_tool_call_count": lambda ctx: ctx.extracted.tool_call_count,
    "run_agent_tokens": lambda ctx: max(0, ctx.extracted.total_tokens - ctx.extracted.race_context_tokens),
    "run_race_context_tokens": lambda ctx: ctx.extracted.race_context_tokens,
    "run_model_cost_usd": MetricContext.cost_usd,
    "run_completed_successfully": lambda ctx: bool(ctx.extracted.completed),
    "run_failure_count": lambda ctx: ctx.extracted.failure_count,
    "validator_pass_rate": _validator_pass_rate,
    "behavioral_recovery_score": _signal("recovery_behavior"),
    "behavioral_exploration_efficiency_score": _signal("exploration_efficiency"),
    "behavioral_error_cascade_score": _signal("error_cascade"),
    "behavioral_scope_adherence_score": _signal("scope_adherence"),
}


def collect(declaration: MetricDeclaration, ctx: MetricContext) -> MetricResult:
    declaration = declaration if isinstance(declaration, dict) else {}
    collector = str(declaration.get("collector") or "")
    result = MetricResult(
        key=str(declaration.get("key") or ""),
        type=str(declaration.get("type") or "numeric"),
        collector=collector,
        unit=declaration.get("unit"),
        state="error",
    )
    fn = COLLECTORS.get(collector)
    if fn is None:
        result.reason = f"unknown collector {collector!r}"
        return result
    try:
        value = fn(ctx)
    except MetricUnavailable as exc:
        result.state, result.reason = "unavailable", str(exc)
        return result
    except Exception as exc:  # noqa: BLE001 — scoring never raises
        result.reason = f"{type(exc).__name__}: {exc}"
        return result
    result.state, result.value = "available", value
    if isinstance(value, bool):
        result.boolean_value = value
        result.numeric_value = 1.0 if value else 0.0
    elif isinstance(value, (int, float)):
        result.numeric_value = float(value)
    else:
        result.text_value = str(value)
    return result


def collect_all(ctx: MetricContext) -> list[MetricResult]:
    return [collect(d, ctx) for d in ctx.spec.get("metrics") or []]

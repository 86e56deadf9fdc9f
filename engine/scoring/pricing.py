"""Model cost from the evaluation spec's pricing table (runtime.md §5.6 ``cost``)."""

from __future__ import annotations

import dataclasses
import re
from typing import Any

from engine.scoring.evidence import Extracted

JSON = Any
DATE_SUFFIX = re.compile(r"-\d{4}-\d{2}-\d{2}$")


@dataclasses.dataclass
class CostResult:
    cost_usd: float | None
    reason: str = ""
    per_model: list[dict[str, JSON]] = dataclasses.field(default_factory=list)


def _rows(evaluation_spec: dict[str, JSON]) -> list[dict[str, JSON]]:
    pricing = evaluation_spec.get("pricing") or {}
    rows = pricing.get("models") if isinstance(pricing, dict) else None
    return [r for r in rows or [] if isinstance(r, dict)]


def find_price(evaluation_spec: dict[str, JSON], provider_key: str, model_id: str) -> dict[str, JSON] | None:
    """The pricing row for a model; the id is also tried without a trailing -YYYY-MM-DD."""
    rows = _rows(evaluation_spec)
    for candidate in dict.fromkeys([model_id, DATE_SUFFIX.sub("", model_id)]):
        for row in rows:
            if row.get("provider_model_id") == candidate and (
                not provider_key or not row.get("provider_key") or row.get("provider_key") == provider_key
            ):
                return row
    return None


def price(row: dict[str, JSON], input_tokens: int, output_tokens: int) -> float:
    return input_tokens / 1e6 * float(row.get("input_cost_per_million_tokens") or 0) + output_tokens / 1e6 * float(
        row.get("output_cost_per_million_tokens") or 0
    )


def split_model(model: str | dict[str, str] | None) -> tuple[str, str] | None:
    if isinstance(model, dict):
        model_id = str(model.get("provider_model_id") or model.get("model") or "")
        return (str(model.get("provider_key") or ""), model_id) if model_id else None
    if isinstance(model, str) and model:
        return ("", model)
    return None


def model_cost(evaluation_spec: dict[str, JSON], extracted: Extracted, fallback_model: JSON = None) -> CostResult:
    models = [m for m in extracted.models.values()]
    with_usage = [m for m in models if m.input_tokens or m.output_tokens]
    if not with_usage:
        observed = [(m.provider_key, m.provider_model_id) for m in models]
        if not observed and split_model(fallback_model):
            observed = [split_model(fallback_model)]
        if len(observed) != 1:
            return CostResult(None, "no per-model usage and not exactly one observed model")
        provider, model_id = observed[0]
        row = find_price(evaluation_spec, provider, model_id)
        if row is None:
            return CostResult(None, f"model {model_id!r} has no pricing")
        cost = price(row, extracted.input_tokens, extracted.output_tokens)
        return CostResult(cost, "", [{"provider_key": provider, "provider_model_id": model_id, "cost_usd": cost}])
    total, per_model = 0.0, []
    for usage in with_usage:
        row = find_price(evaluation_spec, usage.provider_key, usage.provider_model_id)
        if row is None:
            return CostResult(None, f"model {usage.provider_model_id!r} has no pricing")
        cost = price(row, usage.input_tokens, usage.output_tokens)
        total += cost
        per_model.append(
            {
                "provider_key": usage.provider_key,
                "provider_model_id": usage.provider_model_id,
                "input_tokens": usage.input_tokens,
                "output_tokens": usage.output_tokens,
                "cost_usd": cost,
            }
        )
    return CostResult(total, "", per_model)

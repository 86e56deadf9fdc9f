"""Model cost (runtime.md §5.6 ``cost``): each model priced by the first source that knows it.

1. The evaluation spec's own ``pricing.models`` rows (the pack author's word wins).
2. The ``scripted`` provider: deterministic and offline, it costs exactly 0 and says so.
3. Operator rows (``workspace_prices``, same shape): per-workspace overrides the caller passes in.
4. The ``genai-prices`` library's bundled snapshot (offline; the installed version is the source).

A model no source prices keeps cost unavailable, with a reason naming the model and what to
do. Each priced model records where its price came from (``source``), so a scorecard says why
it costs what it costs.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import importlib.metadata
import re
from datetime import datetime
from typing import Any

from engine.scoring.documents import ModelCost
from engine.scoring.evidence import Extracted
from engine.scoring.spec import EvaluationSpec, ModelPrice

DATE_SUFFIX = re.compile(r"-\d{4}-\d{2}-\d{2}$")
FREE_PROVIDERS = frozenset({"scripted"})
SOURCE_PACK = "pack"
SOURCE_WORKSPACE = "workspace"
SOURCE_SCRIPTED = "scripted"
LIBRARY = "genai-prices"
# Our provider keys → the library's provider ids. ``custom`` (any OpenAI-compatible server) and
# hosted agents are absent on purpose: a self-hosted model has no list price.
LIBRARY_PROVIDERS = {
    "openai": "openai",
    "anthropic": "anthropic",
    "gemini": "google",
    "google": "google",
    "xai": "x-ai",
    "mistral": "mistral",
    "openrouter": "openrouter",
}
WHAT_TO_DO = "add a pricing row to the pack's evaluation_spec.pricing or a workspace price override (admin → Model prices)"


@dataclasses.dataclass
class CostResult:
    cost_usd: float | None
    reason: str = ""
    per_model: list[ModelCost] = dataclasses.field(default_factory=list)


@dataclasses.dataclass(frozen=True)
class Priced:
    cost_usd: float
    source: str


def _rows(evaluation_spec: EvaluationSpec) -> list[ModelPrice]:
    pricing = evaluation_spec.get("pricing") or {}
    rows = pricing.get("models") if isinstance(pricing, dict) else None
    return [r for r in rows or [] if isinstance(r, dict)]


def _find_row(rows: list[ModelPrice], provider_key: str, model_id: str) -> ModelPrice | None:
    for candidate in dict.fromkeys([model_id, DATE_SUFFIX.sub("", model_id)]):
        for row in rows:
            if row.get("provider_model_id") == candidate and (
                not provider_key or not row.get("provider_key") or row.get("provider_key") == provider_key
            ):
                return row
    return None


def find_price(evaluation_spec: EvaluationSpec, provider_key: str, model_id: str) -> ModelPrice | None:
    """The spec's pricing row for a model; the id is also tried without a trailing -YYYY-MM-DD."""
    return _find_row(_rows(evaluation_spec), provider_key, model_id)


def price(row: ModelPrice, input_tokens: int, output_tokens: int) -> float:
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


@functools.cache
def _library() -> Any:
    """The price library, imported on first use: loading its snapshot takes about a second, which
    every process importing the engine would otherwise pay. None when it is not installed."""
    try:
        return importlib.import_module("genai_prices")
    except ImportError:
        return None


@functools.cache
def library_source() -> str:
    """``genai-prices <version>``: the exact price snapshot a library price came from."""
    try:
        return f"{LIBRARY} {importlib.metadata.version(LIBRARY)}"
    except importlib.metadata.PackageNotFoundError:
        return LIBRARY


def library_price(provider_key: str, model_id: str, input_tokens: int, output_tokens: int, at: datetime | None = None) -> float | None:
    """The library's price for this usage, or None when it does not know the provider or model.

    Without a provider key the library guesses the provider from the model id (``gpt-4o`` →
    OpenAI). ``at`` selects the price in force then (a re-score gives the same cost).
    """
    library = _library()
    if library is None:
        return None
    provider_id = LIBRARY_PROVIDERS.get(provider_key) if provider_key else None
    if provider_key and provider_id is None:
        return None
    try:
        result = library.calc_price(
            library.Usage(input_tokens=input_tokens, output_tokens=output_tokens),
            model_id,
            provider_id=provider_id,
            genai_request_timestamp=at,
        )
    except LookupError:
        return None
    except Exception:  # noqa: BLE001 — a library bug must not stop scoring; the model stays unpriced
        return None
    return float(result.total_price)


def price_usage(
    spec_rows: list[ModelPrice],
    workspace_rows: list[ModelPrice],
    provider_key: str,
    model_id: str,
    input_tokens: int,
    output_tokens: int,
    *,
    at: datetime | None = None,
) -> Priced | None:
    """The cost of one model's usage from the first source that prices it (see the module doc)."""
    row = _find_row(spec_rows, provider_key, model_id)
    if row is not None:  # the pack author's word wins, even for the scripted provider (demo packs price it)
        return Priced(price(row, input_tokens, output_tokens), SOURCE_PACK)
    if provider_key in FREE_PROVIDERS:
        return Priced(0.0, SOURCE_SCRIPTED)
    row = _find_row(workspace_rows, provider_key, model_id)
    if row is not None:
        return Priced(price(row, input_tokens, output_tokens), SOURCE_WORKSPACE)
    cost = library_price(provider_key, model_id, input_tokens, output_tokens, at)
    return None if cost is None else Priced(cost, library_source())


def _unpriced(provider_key: str, model_id: str) -> str:
    where = f" (provider {provider_key})" if provider_key else ""
    return f"model {model_id!r}{where} has no price: {WHAT_TO_DO}"


def model_cost(
    evaluation_spec: EvaluationSpec,
    extracted: Extracted,
    fallback_model: str | dict[str, str] | None = None,
    *,
    workspace_prices: list[ModelPrice] | None = None,
) -> CostResult:
    """The case's model cost: per observed model with usage, else the run totals of its one model."""
    spec_rows, workspace_rows = _rows(evaluation_spec), [r for r in workspace_prices or [] if isinstance(r, dict)]
    at = extracted.start_at
    models = list(extracted.models.values())
    with_usage = [m for m in models if m.input_tokens or m.output_tokens]
    if not with_usage:
        observed = [(m.provider_key, m.provider_model_id) for m in models]
        fallback = split_model(fallback_model)
        if not observed and fallback:
            observed = [fallback]
        if len(observed) != 1:
            return CostResult(None, "no per-model usage and not exactly one observed model")
        provider, model_id = observed[0]
        priced = price_usage(spec_rows, workspace_rows, provider, model_id, extracted.input_tokens, extracted.output_tokens, at=at)
        if priced is None:
            return CostResult(None, _unpriced(provider, model_id))
        entry: ModelCost = {"provider_key": provider, "provider_model_id": model_id, "cost_usd": priced.cost_usd, "source": priced.source}
        return CostResult(priced.cost_usd, "", [entry])
    total = 0.0
    per_model: list[ModelCost] = []
    for usage in with_usage:
        priced = price_usage(
            spec_rows, workspace_rows, usage.provider_key, usage.provider_model_id, usage.input_tokens, usage.output_tokens, at=at
        )
        if priced is None:
            return CostResult(None, _unpriced(usage.provider_key, usage.provider_model_id))
        total += priced.cost_usd
        per_model.append(
            {
                "provider_key": usage.provider_key,
                "provider_model_id": usage.provider_model_id,
                "input_tokens": usage.input_tokens,
                "output_tokens": usage.output_tokens,
                "cost_usd": priced.cost_usd,
                "source": priced.source,
            }
        )
    return CostResult(total, "", per_model)

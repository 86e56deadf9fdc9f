"""Cost from the pack's rows, the workspace's overrides, the price library, and 0 for scripted."""

from __future__ import annotations

import importlib.metadata

import pytest

from engine.scoring import score_case
from engine.scoring.evidence import extract
from engine.scoring.pricing import library_price, library_source, model_cost
from engine.tests.scoring.helpers import Events, evidence, run_events, spec
from engine.types import JSON

COST_DIMENSION = {"key": "cost", "source": "cost", "better_direction": "lower", "normalization": {"target": 0.001, "max": 1.0}}
GPT_4O = 1000 / 1e6 * 2.5 + 500 / 1e6 * 10  # the library's (and the spec helper's) gpt-4o price for the helper's usage


def unpriced_spec(**extra):
    return {**spec(dimensions=[COST_DIMENSION], **extra), "pricing": {}}


def events_for(provider: str, model: str, input_tokens: int = 1000, output_tokens: int = 500) -> list:
    events = run_events(model=model, input_tokens=input_tokens, output_tokens=output_tokens)
    payload = events.items[2]["payload"]
    assert isinstance(payload, dict)
    payload["provider_key"] = provider
    return events.items


def cost(ev, s=None, workspace=None):
    result = score_case(s or unpriced_spec(), ev, fallback_pricing=workspace).as_dict()
    return result["cost_usd"], result["cost_detail"], result["dimensions"]["cost"]


def test_the_price_library_prices_a_known_model_offline():
    usd, detail, dimension = cost(evidence(events=events_for("openai", "gpt-4o")))
    assert usd == pytest.approx(GPT_4O)
    assert detail["per_model"][0]["source"] == f"genai-prices {importlib.metadata.version('genai-prices')}"
    assert dimension["state"] == "available" and dimension["raw_value"] == pytest.approx(GPT_4O)


def test_our_provider_keys_map_to_the_library_s():
    assert library_price("gemini", "gemini-2.5-flash", 1_000_000, 0) == pytest.approx(0.3)
    assert library_price("anthropic", "claude-3-5-sonnet-20241022", 0, 1_000_000) == pytest.approx(15)
    assert library_price("", "gpt-4o-mini", 1_000_000, 0) == pytest.approx(0.15)  # provider guessed from the id
    assert library_source().startswith("genai-prices ")


def test_a_self_hosted_or_unknown_provider_is_not_priced_by_the_library():
    assert library_price("custom", "gpt-4o", 1000, 1000) is None
    assert library_price("openai", "no-such-model-7", 1000, 1000) is None


def test_the_scripted_provider_costs_exactly_zero_and_says_so():
    usd, detail, dimension = cost(evidence(events=events_for("scripted", "scripted-agent-1")))
    assert usd == 0.0 and detail["state"] == "available"
    assert detail["per_model"][0]["source"] == "scripted"
    assert (dimension["state"], dimension["score"]) == ("available", 1.0)


def test_an_unknown_model_keeps_cost_unavailable_and_names_the_model():
    usd, detail, dimension = cost(evidence(events=events_for("custom", "acme-llm-1")))
    assert usd is None and detail["state"] == "unavailable"
    assert dimension["state"] == "unavailable"
    assert "model 'acme-llm-1' (provider custom) has no price" in dimension["reason"]
    assert "workspace price override" in dimension["reason"] and "evaluation_spec.pricing" in dimension["reason"]


def test_the_pack_s_rows_win_over_the_workspace_s_which_win_over_the_library():
    ev = evidence(events=events_for("openai", "gpt-4o"))
    workspace = [
        {"provider_key": "openai", "provider_model_id": "gpt-4o", "input_cost_per_million_tokens": 1, "output_cost_per_million_tokens": 1}
    ]
    usd, detail, _ = cost(ev, workspace=workspace)
    assert (usd, detail["per_model"][0]["source"]) == (pytest.approx(1500 / 1e6), "workspace")
    pack = {**unpriced_spec(), "pricing": {"models": [{**workspace[0], "input_cost_per_million_tokens": 100}]}}
    usd, detail, _ = cost(ev, pack, workspace=workspace)
    assert (usd, detail["per_model"][0]["source"]) == (pytest.approx(100 * 1000 / 1e6 + 500 / 1e6), "pack")


def test_a_workspace_row_without_provider_prices_the_model_on_any_provider():
    row = {"provider_key": "", "provider_model_id": "acme-llm-1", "input_cost_per_million_tokens": 2, "output_cost_per_million_tokens": 4}
    usd, detail, _ = cost(evidence(events=events_for("custom", "acme-llm-1")), workspace=[row])
    assert usd == pytest.approx(1000 / 1e6 * 2 + 500 / 1e6 * 4) and detail["per_model"][0]["source"] == "workspace"


def test_every_model_of_a_case_is_priced_from_its_own_source():
    events = Events().add("system.run.started", {}, 0)
    for provider, model in (("scripted", "helper"), ("openai", "gpt-4o")):
        usage: dict[str, JSON] = {"input_tokens": 1000, "output_tokens": 500}
        events.add("model.call.completed", {"provider_key": provider, "provider_model_id": model, "usage": usage}, 10)
    events.add("system.run.completed", {"final_output": "42"}, 20)
    result = model_cost({}, extract(evidence(events=events.items)))
    assert result.cost_usd == pytest.approx(GPT_4O)
    assert [m["source"].split()[0] for m in result.per_model] == ["scripted", "genai-prices"]


def test_the_run_total_is_priced_when_only_the_lane_s_model_is_known():
    events = Events().add("system.run.started", {}, 0).add("system.run.completed", {"final_output": "42"}, 20)
    ev = evidence(events=events.items, usage={"input_tokens": 1000, "output_tokens": 500, "total_tokens": 1500})
    ev.model = {"provider_key": "openai", "provider_model_id": "gpt-4o"}
    result = model_cost({}, extract(ev), ev.model)
    assert result.cost_usd == pytest.approx(GPT_4O)

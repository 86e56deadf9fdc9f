from __future__ import annotations

import pytest

from engine.scoring import score_case
from engine.scoring.spec import ModelPrice
from engine.tests.scoring.helpers import Events, evidence, run_events, spec

COLLECTORS = [
    "run_total_latency_ms",
    "run_ttft_ms",
    "run_input_tokens",
    "run_output_tokens",
    "run_total_tokens",
    "run_tool_call_count",
    "run_agent_tokens",
    "run_race_context_tokens",
    "run_model_cost_usd",
    "run_completed_successfully",
    "run_failure_count",
    "validator_pass_rate",
    "behavioral_recovery_score",
    "behavioral_exploration_efficiency_score",
    "behavioral_error_cascade_score",
    "behavioral_scope_adherence_score",
]


def metrics_for(ev, collectors=COLLECTORS) -> dict:
    s = spec(metrics=[{"key": c, "type": "numeric", "collector": c} for c in collectors])
    return {m["key"]: m for m in score_case(s, ev).as_dict()["metric_details"]}


def tool_run() -> list:
    events = run_events("42")
    events.items.pop()  # drop completion; add tools first
    events.tool("search", {"q": "a"}, failed=True, origin="policy")
    events.tool("search", {"q": "a"}, failed=True)
    events.tool("search", {"q": "b"})
    events.add("race.standings.injected", {"tokens": 100})
    events.add(
        "system.run.completed",
        {"final_output": "42", "input_tokens": 1000, "output_tokens": 500, "total_tokens": 1500, "tool_call_count": 3},
        2000,
    )
    return events.items


def test_every_collector_yields_a_value_for_a_completed_run():
    metrics = metrics_for(evidence("42", events=tool_run()))
    values = {k: m["value"] for k, m in metrics.items()}
    assert all(m["state"] == "available" for m in metrics.values()), metrics
    assert values["run_total_latency_ms"] == 2000
    assert values["run_ttft_ms"] == 300
    assert (values["run_input_tokens"], values["run_output_tokens"], values["run_total_tokens"]) == (1000, 500, 1500)
    assert values["run_tool_call_count"] == 3
    assert values["run_race_context_tokens"] == 100
    assert values["run_agent_tokens"] == 1400
    assert values["run_model_cost_usd"] == pytest.approx(1000 / 1e6 * 2.5 + 500 / 1e6 * 10)
    assert values["run_completed_successfully"] is True
    assert values["run_failure_count"] == 2
    assert values["validator_pass_rate"] == 1.0
    assert values["behavioral_recovery_score"] == 0.5  # first failure repeated, second adapted
    assert values["behavioral_exploration_efficiency_score"] == pytest.approx(2 / 3)
    assert values["behavioral_error_cascade_score"] == 0.5
    assert values["behavioral_scope_adherence_score"] == pytest.approx(2 / 3)


def test_a_failed_run_is_not_completed_and_counts_the_failure():
    ev = evidence(None, events=run_events(failed=True).items, status="failed")
    metrics = metrics_for(ev, ["run_completed_successfully", "run_failure_count", "run_total_latency_ms"])
    assert metrics["run_completed_successfully"]["value"] is False
    assert metrics["run_failure_count"]["value"] == 1
    assert metrics["run_total_latency_ms"]["value"] == 2000


def test_latency_falls_back_to_duration_ms_and_is_unavailable_without_either():
    ev = evidence("42", events=[], duration_ms=1234)
    assert metrics_for(ev, ["run_total_latency_ms"])["run_total_latency_ms"]["value"] == 1234
    ev = evidence("42", events=[])
    assert metrics_for(ev, ["run_total_latency_ms"])["run_total_latency_ms"]["state"] == "unavailable"


def test_cost_is_unavailable_for_an_unpriced_model_and_strips_date_suffixes():
    ev = evidence("42", events=run_events(model="claude-x").items)
    assert metrics_for(ev, ["run_model_cost_usd"])["run_model_cost_usd"]["state"] == "unavailable"
    ev = evidence("42", events=run_events(model="gpt-4o-2024-08-06").items)
    assert metrics_for(ev, ["run_model_cost_usd"])["run_model_cost_usd"]["state"] == "available"


def test_cost_uses_run_totals_with_exactly_one_known_model():
    events = Events().add("system.run.started").add("system.run.completed", {"final_output": "42"}, 10).items
    ev = evidence("42", events=events, model="gpt-4o", usage={"input_tokens": 1_000_000, "output_tokens": 0, "total_tokens": 1_000_000})
    assert metrics_for(ev, ["run_model_cost_usd"])["run_model_cost_usd"]["value"] == pytest.approx(2.5)


def test_validator_pass_rate_is_unavailable_when_a_validator_is_unavailable():
    # The harness stopped the run (a provider outage): the missing answer is missing evidence.
    ev = evidence(None, events=[], status="failed", stop_reason="provider_error")
    assert metrics_for(ev, ["validator_pass_rate"])["validator_pass_rate"]["state"] == "unavailable"


def test_an_answer_the_agent_never_gave_counts_as_a_failed_validator():
    # The run completed (or the agent broke the protocol): no answer is the agent's failure.
    for ev in (evidence(None, events=[]), evidence(None, events=[], status="failed", stop_reason="agent_error")):
        metric = metrics_for(ev, ["validator_pass_rate"])["validator_pass_rate"]
        assert (metric["state"], metric["value"]) == ("available", 0.0)


def test_unknown_collector_is_a_metric_error():
    metric = metrics_for(evidence("42"), ["run_vibes"])["run_vibes"]
    assert metric["state"] == "error"


def test_token_totals_fall_back_to_model_call_usage():
    events = Events().add("system.run.started")
    events.add(
        "model.call.completed", {"provider_key": "openai", "provider_model_id": "gpt-4o", "usage": {"input_tokens": 7, "output_tokens": 3}}
    )
    events.add("system.run.completed", {"final_output": "42"}, 10)
    metrics = metrics_for(evidence("42", events=events.items), ["run_total_tokens"])
    assert metrics["run_total_tokens"]["value"] == 10


def test_fallback_pricing_prices_models_the_spec_does_not_list():
    from engine.scoring import score_case as score

    ev = evidence("42", events=run_events(model="claude-x").items)
    s = spec(metrics=[{"key": "c", "type": "numeric", "collector": "run_model_cost_usd"}])
    rows: list[ModelPrice] = [
        {"provider_key": "openai", "provider_model_id": "claude-x", "input_cost_per_million_tokens": 1, "output_cost_per_million_tokens": 1}
    ]
    metric = score(s, ev, fallback_pricing=rows).as_dict()["metric_details"][0]
    assert metric["value"] == pytest.approx(1500 / 1e6)

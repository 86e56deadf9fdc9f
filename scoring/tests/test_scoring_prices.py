"""Case cost on a real provider: the price library, or the workspace's override (docs/scoring.md, Cost)."""

from __future__ import annotations

import pytest

from infrastructure.models import ModelPrice
from runs.models import Lane, RunEvent
from scoring.models import CaseScore
from scoring.tests.factories import SPEC, make_pack_version, make_run, score_run

# The factory's spec without its own pricing rows, so prices come from elsewhere.
UNPRICED = {**SPEC, "pricing": {}}


def run_on(workspace, provider_key: str, model: str):
    run = make_run(workspace, pack_version=make_pack_version(workspace, spec=UNPRICED), score=False)
    for lane in Lane.objects.filter(run=run):
        lane.snapshot = {"deployment": {"name": "d", "model": model}, "provider_account": {"provider_key": provider_key}}
        lane.save(update_fields=["snapshot"])
    for event in RunEvent.objects.filter(run=run, event_type="model.call.completed"):
        event.payload = {**event.payload, "provider_key": provider_key, "provider_model_id": model}
        event.save(update_fields=["payload"])
    score_run(run)
    return CaseScore.objects.filter(case_run__run=run).first().document


@pytest.mark.django_db
def test_a_known_model_is_priced_by_the_library(workspace):
    document = run_on(workspace, "openai", "gpt-4o")
    assert document["cost_usd"] == pytest.approx(100 / 1e6 * 2.5 + 20 / 1e6 * 10)
    assert document["cost_detail"]["per_model"][0]["source"].startswith("genai-prices ")
    assert document["dimensions"]["cost"]["state"] == "available"


@pytest.mark.django_db
def test_an_unknown_model_is_unavailable_until_an_operator_prices_it(workspace):
    document = run_on(workspace, "custom", "acme-1")
    assert document["cost_usd"] is None and document["validity"] == "degraded"
    assert "model 'acme-1' (provider custom) has no price" in document["dimensions"]["cost"]["reason"]
    ModelPrice.objects.create(
        workspace=workspace,
        provider_key="custom",
        provider_model_id="acme-1",
        input_cost_per_million_tokens=10,
        output_cost_per_million_tokens=20,
    )
    document = run_on(workspace, "custom", "acme-1")
    assert document["cost_usd"] == pytest.approx(100 / 1e6 * 10 + 20 / 1e6 * 20)
    assert document["cost_detail"]["per_model"][0]["source"] == "workspace"


@pytest.mark.django_db
def test_a_workspace_override_wins_over_the_library_but_not_over_the_pack(workspace, other_workspace):
    ModelPrice.objects.create(
        workspace=workspace,
        provider_key="openai",
        provider_model_id="gpt-4o",
        input_cost_per_million_tokens=1,
        output_cost_per_million_tokens=1,
    )
    assert run_on(workspace, "openai", "gpt-4o")["cost_detail"]["per_model"][0]["source"] == "workspace"
    assert run_on(other_workspace, "openai", "gpt-4o")["cost_detail"]["per_model"][0]["source"].startswith("genai-prices")


@pytest.mark.django_db
def test_the_scripted_provider_costs_nothing_and_the_lane_is_valid(workspace):
    document = run_on(workspace, "scripted", "scripted-agent-1")
    assert (document["cost_usd"], document["dimensions"]["cost"]["state"]) == (0.0, "available")
    assert document["validity"] == "valid"

"""Issue 12 item 1, done-when: the reference hosted agent, on loopback, races a native scripted agent
on a real pack, started from the API with a real worker; its events arrive live through the
callback and the scorecard shows each lane's evidence tier."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from django.test import Client

from engine.events import SYSTEM_OUTPUT_FINALIZED, SYSTEM_RUN_COMPLETED, TOOL_CALL_COMPLETED
from runs.models import CaseRun, CaseStatus, Run, RunEvent, RunStatus
from runs.tests.hosted_helpers import agent_on_loopback, agent_url
from runs.tests.worker import Worker, wait_for

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

ROOT = Path(__file__).resolve().parents[2]
PACK = ROOT / "packs" / "library" / "knowledge-reasoning-regression.yaml"
AGENTS = ROOT / "runs" / "tests" / "real_packs" / "agents" / "knowledge-reasoning-regression.yaml"


def _scripts() -> dict:
    return yaml.safe_load(AGENTS.read_text())["agents"]


def _answers() -> dict[str, str]:
    """The good scripted agent's answers, which the hosted agent gives from its answer table."""
    return {case: steps[0]["text"] for case, steps in _scripts()["good"]["script"]["cases"].items()}


def _api_setup(client, workspace, endpoint: str) -> tuple[int, int, int]:
    """The pack, a native scripted deployment (the pack's 'bad' agent) and a hosted one, all through the API."""
    base = f"/api/v1/workspaces/{workspace.slug}"
    pack = client.post(f"{base}/packs/publish", {"yaml": PACK.read_text()}, format="json")
    assert pack.status_code == 201, pack.content
    version_id = pack.json()["pack_version_id"]
    account = client.post(f"{base}/provider-accounts", {"name": "scripted", "provider_key": "scripted"}, format="json")
    assert account.status_code == 201, account.content
    profiles = {}
    for target in ("prompt_eval", "hosted_external"):
        made = client.post(f"{base}/runtime-profiles", {"name": target, "execution_target": target}, format="json")
        assert made.status_code == 201, made.content
        profiles[target] = made.json()["id"]
    common = {"provider_account_id": account.json()["id"], "model": "scripted-1"}
    native = client.post(
        f"{base}/deployments",
        {
            **common,
            "name": "native scripted",
            "runtime_profile_id": profiles["prompt_eval"],
            "deployment_config": {"script": _scripts()["bad"]["script"]},
        },
        format="json",
    )
    assert native.status_code == 201, native.content
    hosted = client.post(
        f"{base}/deployments",
        {**common, "name": "hosted reference", "runtime_profile_id": profiles["hosted_external"], "endpoint_url": endpoint},
        format="json",
    )
    assert hosted.status_code == 201, hosted.content
    assert hosted.json()["execution_target"] == "hosted_external" and hosted.json()["endpoint_url"] == endpoint
    return version_id, native.json()["id"], hosted.json()["id"]


def test_a_hosted_agent_races_a_native_one_on_a_real_pack(live_server, api_client_for, workspace, admin, broker_queue, settings):
    settings.ALLOW_PRIVATE_PROVIDER_URLS = True  # the operator setting: loopback endpoints allowed
    client = api_client_for(admin)
    with agent_on_loopback(answers=_answers()) as agent:
        version_id, native_id, hosted_id = _api_setup(client, workspace, agent_url(agent))
        env = {"ALLOW_PRIVATE_PROVIDER_URLS": "true", "HOSTED_CALLBACK_BASE_URL": live_server.url}
        worker = Worker(queue=broker_queue, extra_env=env).start()
        try:
            created = client.post(
                f"/api/v1/workspaces/{workspace.slug}/runs",
                {"pack_version_id": version_id, "deployment_ids": [native_id, hosted_id]},
                format="json",
            )
            assert created.status_code == 201, created.content
            run_id = created.json()["id"]
            assert wait_for(lambda: Run.objects.get(pk=run_id).is_terminal, timeout=120)
            assert wait_for(lambda: Run.objects.get(pk=run_id).score_status in ("scored", "errored"), timeout=60)
        finally:
            worker.stop()
    run = Run.objects.get(pk=run_id)
    assert run.status == RunStatus.COMPLETED, run.failure_reason
    hosted_lane = run.lanes.get(deployment_id=hosted_id)
    hosted_cases = CaseRun.objects.filter(lane=hosted_lane)
    assert set(hosted_cases.values_list("status", flat=True)) == {CaseStatus.COMPLETED}
    assert {c.case_key: c.final_output for c in hosted_cases} == _answers()
    assert {c.verification["evidence_tier"] for c in hosted_cases} == {"structured_trace"}
    # The agent's events were stored like native ones: one answer and one completion per case, plus its tool call.
    events = RunEvent.objects.filter(lane=hosted_lane)
    for event_type in (SYSTEM_OUTPUT_FINALIZED, SYSTEM_RUN_COMPLETED, TOOL_CALL_COMPLETED):
        assert events.filter(event_type=event_type).count() == 5, event_type
    page_client = Client()
    page_client.force_login(admin)
    hosted_case = hosted_cases.order_by("position").first()
    replay = page_client.get(f"/w/{workspace.slug}/runs/{run_id}/cases/{hosted_case.pk}/")
    assert replay.status_code == 200 and "lookup" in replay.content.decode()  # the agent's reported tool call
    live = client.get(f"/api/v1/workspaces/{workspace.slug}/runs/{run_id}/events")
    assert live.status_code == 200
    assert any(e["source"] == "hosted_agent" for e in live.json()["items"])
    # The scorecard: the hosted agent (all correct) beats the native 'bad' agent; each lane shows its tier.
    card = client.get(f"/api/v1/workspaces/{workspace.slug}/runs/{run_id}/scorecard").json()
    tiers = {row["deployment"]: row["evidence_tier"] for row in card["lanes"]}
    assert tiers == {"native scripted": "native", "hosted reference": "structured_trace"}
    assert card["winner_lane_id"] == hosted_lane.pk
    lane_page = page_client.get(f"/w/{workspace.slug}/runs/{run_id}/lanes/{hosted_lane.pk}/scorecard/").content.decode()
    assert 'data-evidence-tier="structured_trace"' in lane_page and "Evidence: structured trace" in lane_page

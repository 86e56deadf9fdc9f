"""``responses`` packs and race context, through the run API, the worker tasks, the pages and comparisons."""

from __future__ import annotations

import pytest
from django.urls import reverse

from comparisons.services import comparison_create
from infrastructure.models import ExecutionTarget, RuntimeProfile
from runs.events import payload_hydrate
from runs.models import CaseRun, Lane, Run, RunEvent, RunStatus
from runs.pipeline.native import lane_letter, standings_text
from runs.tests.factories import make_deployment, native_pack_yaml, publish
from scoring.tests.factories import make_pack_version, make_run

pytestmark = pytest.mark.django_db

BASE = "/api/v1/workspaces/acme/runs"
READ = {"tool": "read_file", "args": {"path": "/workspace/notes.txt"}}
THINKING = "The answer is in notes.txt, so read it first."
GOOD = {"two-plus-two": "4", "three-squared": "9"}


def events_of(run: Run, event_type: str) -> list[RunEvent]:
    return list(RunEvent.objects.filter(run=run, event_type=event_type).order_by("lane_id", "sequence_number"))


def payloads(run: Run, event_type: str) -> list[dict]:
    return [payload_hydrate(event.payload) for event in events_of(run, event_type)]


# -- responses mode ---------------------------------------------------------------------------


def test_a_responses_pack_runs_and_records_tool_calls_reasoning_and_usage(api_client_for, client_for, member, workspace, admin, tasks):
    version = publish(workspace, admin, native_pack_yaml(cases=2, mode="responses"))
    assert version.execution_mode == "responses"
    deployment = make_deployment(
        workspace, script=[{**READ, "reasoning": THINKING}, {"submit": "{{last_result}}"}], execution_target="responses"
    )
    response = api_client_for(member).post(BASE, {"pack_version_id": version.pk, "deployment_ids": [deployment.pk]}, format="json")
    assert response.status_code == 201, response.json()
    assert response.json()["execution_mode"] == "responses"
    tasks.drain()
    run = Run.objects.get(pk=response.json()["id"])
    assert run.status == RunStatus.COMPLETED, run.failure_reason
    outputs = sorted(CaseRun.objects.filter(run=run).values_list("final_output", flat=True))
    assert "note number 0" in outputs[0] and "note number 1" in outputs[1]
    assert all(case.passed for case in CaseRun.objects.filter(run=run))
    reasoning = payloads(run, "model.reasoning")
    assert [p["summary_text"] for p in reasoning] == [THINKING, THINKING]
    assert all(p["reasoning_tokens"] == len(THINKING.split()) and p["step_index"] == 1 for p in reasoning)
    assert [p["tool_name"] for p in payloads(run, "tool.call.completed")] == ["read_file", "submit"] * 2
    usages = [p["usage"] for p in payloads(run, "model.call.completed")]
    assert len(usages) == 4 and all(u["input_tokens"] > 0 and u["total_tokens"] == u["input_tokens"] + u["output_tokens"] for u in usages)
    assert {e.source for e in RunEvent.objects.filter(run=run, event_type__startswith="model.")} == {"responses_engine"}
    assert CaseRun.objects.filter(run=run, total_tokens__gt=0).count() == 2
    case = CaseRun.objects.filter(run=run).first()
    replay = client_for(member).get(reverse("runs:case_replay", args=["acme", run.pk, case.pk])).content.decode()
    assert "Model reasoning (summary)" in replay and THINKING in replay


def test_a_responses_pack_refuses_deployments_whose_provider_has_no_responses_api(api_client_for, member, workspace, admin):
    version = publish(workspace, admin, native_pack_yaml(cases=1, mode="responses"))
    claude = make_deployment(workspace, name="claude", provider_key="anthropic", execution_target="responses")
    response = api_client_for(member).post(BASE, {"pack_version_id": version.pk, "deployment_ids": [claude.pk]}, format="json")
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "responses_unsupported" and "deployment_ids" in error["fields"] and "claude" in error["message"]
    assert not Run.objects.exists()


def test_the_new_run_form_offers_only_responses_capable_agents_for_a_responses_pack(client_for, member, workspace, admin):
    version = publish(workspace, admin, native_pack_yaml(cases=1, mode="responses"))
    able = make_deployment(workspace, name="gpt-responses", provider_key="openai")
    unable = make_deployment(workspace, name="claude-responses", provider_key="anthropic")
    RuntimeProfile.objects.filter(pk__in=[able.runtime_profile_id, unable.runtime_profile_id]).update(
        execution_target=ExecutionTarget.RESPONSES
    )
    page = client_for(member).get(reverse("runs:create", args=["acme"]), {"pack_version_id": version.pk}, HTTP_HX_REQUEST="true")
    html = page.content.decode()
    assert page.status_code == 200
    assert f'value="{able.pk}"' in html and f'value="{unable.pk}"' not in html


# -- race context: creation -------------------------------------------------------------------


def test_race_context_needs_two_deployments(api_client_for, member, workspace, admin, pack_version):
    one, two = make_deployment(workspace, name="a"), make_deployment(workspace, name="b")
    client = api_client_for(member)
    response = client.post(BASE, {"pack_version_id": pack_version.pk, "deployment_ids": [one.pk], "race_context": True}, format="json")
    assert response.status_code == 400
    assert "race_context" in response.json()["error"]["fields"] and "race_context" in response.json()["error"]["message"]
    response = client.post(BASE, {"pack_version_id": pack_version.pk, "deployment_ids": [one.pk], "race_context": "maybe"}, format="json")
    assert response.status_code == 400 and "race_context" in response.json()["error"]["fields"]
    assert not Run.objects.exists()
    body = {"pack_version_id": pack_version.pk, "deployment_ids": [one.pk, two.pk], "race_context": True}
    response = client.post(BASE, body, format="json")
    assert response.status_code == 201 and response.json()["race_context"] is True
    assert Run.objects.get().race_context is True
    plain = client.post(BASE, {"pack_version_id": pack_version.pk, "deployment_ids": [one.pk, two.pk]}, format="json")
    assert plain.status_code == 201 and plain.json()["race_context"] is False


def test_the_new_run_form_starts_a_race_context_run_and_explains_a_refusal(client_for, member, workspace, pack_version):
    one, two = make_deployment(workspace, name="a"), make_deployment(workspace, name="b")
    client = client_for(member)
    url = reverse("runs:create", args=["acme"])
    page = client.get(url, {"pack_version_id": pack_version.pk}, HTTP_HX_REQUEST="true")
    assert 'name="race_context"' in page.content.decode()
    refused = client.post(url, {"pack_version_id": pack_version.pk, "deployment_ids": [one.pk], "race_context": "on"})
    assert refused.status_code == 200 and not Run.objects.exists()
    assert "at least two deployments" in refused.context["form"].errors["race_context"][0]
    started = client.post(url, {"pack_version_id": pack_version.pk, "deployment_ids": [one.pk, two.pk], "race_context": "on"})
    assert started.status_code == 302
    assert Run.objects.get().race_context is True


# -- race context: the standings the agents are told ------------------------------------------


def test_a_two_lane_race_tells_each_agent_how_the_other_lane_stands(workspace, admin, member, api_client_for, client_for, tasks):
    version = publish(workspace, admin, native_pack_yaml(cases=2))
    script = [READ, READ, READ, {"submit": "{{last_result}}"}]  # four steps: standings are told from step 3
    fast, slow = make_deployment(workspace, name="fast", script=script), make_deployment(workspace, name="slow", script=script)
    body = {"pack_version_id": version.pk, "deployment_ids": [fast.pk, slow.pk], "race_context": True}
    response = api_client_for(member).post(BASE, body, format="json")
    assert response.status_code == 201
    tasks.drain()
    run = Run.objects.get(pk=response.json()["id"])
    assert run.status == RunStatus.COMPLETED, run.failure_reason
    lane_a, lane_b = run.lanes.order_by("lane_index")
    told: dict[int, list[str]] = {lane.pk: [] for lane in (lane_a, lane_b)}
    for event in events_of(run, "model.call.started"):
        payload = payload_hydrate(event.payload)
        told[event.lane_id] += [m["content"] for m in payload["messages"] if m["content"].startswith("Race context")]
    # Every case of each lane heard about the other lane (one note per case, at step 3), never about itself.
    assert len(told[lane_a.pk]) == len(told[lane_b.pk]) == 2
    assert all("lane B (slow)" in text and "lane A" not in text for text in told[lane_a.pk])
    assert all("lane A (fast)" in text and "lane B" not in text for text in told[lane_b.pk])
    assert all(text.startswith("Race context (your step 3): ") for text in told[lane_a.pk] + told[lane_b.pk])
    # The later cases saw a peer that had finished something.
    assert any("has finished" in text for text in told[lane_a.pk] + told[lane_b.pk])
    injected = payloads(run, "race.standings.injected")
    assert len(injected) == 4 and {p["self_step_index"] for p in injected} == {3}
    assert all(p["tokens_added"] > 0 and p["standings_snapshot"].startswith("Race context") for p in injected)
    case = CaseRun.objects.filter(lane=lane_b).first()
    replay = client_for(member).get(reverse("runs:case_replay", args=["acme", run.pk, case.pk])).content.decode()
    assert "Peer standings told to the agent" in replay and "lane A (fast)" in replay


def test_a_plain_multi_lane_run_tells_nobody_anything(workspace, admin, tasks):
    from runs.services import run_create

    version = publish(workspace, admin, native_pack_yaml(cases=1))
    script = [READ, READ, READ, {"submit": "{{last_result}}"}]
    lanes = [make_deployment(workspace, script=script).pk, make_deployment(workspace, script=script).pk]
    run = run_create(workspace=workspace, user=admin, pack_version=version, deployment_ids=lanes)
    tasks.drain()
    assert not events_of(run, "race.standings.injected")
    assert not any("Race context" in str(payload_hydrate(e.payload)) for e in events_of(run, "model.call.started"))


def test_standings_count_finished_and_passed_cases_of_the_other_lanes(workspace, admin):
    run = make_run(workspace, lanes=[GOOD, {"two-plus-two": "5", "three-squared": "9"}, GOOD])
    first, second, third = run.lanes.order_by("lane_index")
    CaseRun.objects.filter(lane=third).update(status="queued", passed=None)
    Lane.objects.filter(pk=third.pk).update(status="executing")
    text = standings_text(run_id=run.pk, lane_id=first.pk)
    assert text == (f"lane B ({second.label}) has finished 2/2 cases, 1 passed; lane C ({third.label}) has not finished a case yet (0/2).")
    solo = make_run(workspace, lanes=[GOOD])
    assert standings_text(run_id=solo.pk, lane_id=solo.lanes.get().pk) == ""  # no peers, nothing to tell
    assert [lane_letter(i) for i in (0, 1, 25, 26, 27)] == ["A", "B", "Z", "AA", "AB"]


# -- race context: the run page and comparisons -----------------------------------------------


def test_the_run_page_shows_whether_peer_standings_were_on(client_for, viewer, workspace):
    race = make_run(workspace, lanes=[GOOD, GOOD])
    Run.objects.filter(pk=race.pk).update(race_context=True)
    plain = make_run(workspace, lanes=[GOOD, GOOD])
    client = client_for(viewer)
    on = client.get(reverse("runs:detail", args=["acme", race.pk])).content.decode()
    off = client.get(reverse("runs:detail", args=["acme", plain.pk])).content.decode()
    assert "Peer standings: on" in on and 'data-race-context="on"' in on
    assert "Peer standings: off" in off and "Peer standings: on" not in off


def _race_pair(workspace):
    version = make_pack_version(workspace)
    baseline, candidate = make_run(workspace, pack_version=version, lanes=[GOOD]), make_run(workspace, pack_version=version, lanes=[GOOD])
    Run.objects.filter(pk=candidate.pk).update(race_context=True)
    candidate.refresh_from_db()
    return baseline, candidate


def test_a_race_context_run_is_not_compared_with_a_plain_one(workspace, admin):
    baseline, candidate = _race_pair(workspace)
    comparison = comparison_create(workspace=workspace, user=admin, baseline_run=baseline, candidate_run=candidate)
    assert (comparison.status, comparison.reason_code) == ("not_comparable", "race_context_mismatch")
    assert "candidate run had peer standings" in comparison.summary["reason"]
    assert comparison.summary["dimension_deltas"] == {}
    Run.objects.filter(pk=baseline.pk).update(race_context=True)
    baseline.refresh_from_db()
    both = comparison_create(workspace=workspace, user=admin, baseline_run=baseline, candidate_run=candidate)
    assert both.status == "comparable"


def test_the_comparison_api_names_the_race_context_mismatch(workspace, member, api_client_for):
    baseline, candidate = _race_pair(workspace)
    response = api_client_for(member).post(
        "/api/v1/workspaces/acme/comparisons", {"baseline_run_id": baseline.pk, "candidate_run_id": candidate.pk}, format="json"
    )
    assert response.status_code == 201
    assert response.json()["status"] == "not_comparable" and response.json()["reason_code"] == "race_context_mismatch"


def test_run_pack_starts_a_race_context_run(workspace, pack_version):
    from io import StringIO

    from django.core.management import call_command
    from django.core.management.base import CommandError

    make_deployment(workspace, name="one")
    make_deployment(workspace, name="two")
    args = ["run_pack", "--workspace", "acme", "--pack-version", str(pack_version.pk), "--deployment", "one", "--race-context"]
    with pytest.raises(CommandError, match="at least two deployments"):
        call_command(*args, stdout=StringIO())
    out = StringIO()
    call_command(*args, "--deployment", "two", stdout=out)
    assert Run.objects.get(pk=int(out.getvalue().strip())).race_context is True

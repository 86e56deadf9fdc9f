from __future__ import annotations

import json

import pytest

from runs import services
from runs.models import CaseRun, Lane, Run, RunStatus
from runs.tests.factories import make_deployment, native_pack_yaml, publish

BASE = "/api/v1/workspaces/acme/runs"


@pytest.fixture
def finished_run(workspace, admin, pack_version, deployment, tasks):
    run = services.run_create(workspace=workspace, user=admin, pack_version=pack_version, deployment_ids=[deployment.pk])
    tasks.drain()
    return run


@pytest.mark.django_db
@pytest.mark.parametrize("persona, expected", [("member", 201), ("viewer", 403), ("stranger", 404)])
def test_creating_a_run_needs_the_member_role(request, api_client_for, pack_version, deployment, persona, expected, tasks):
    client = api_client_for(request.getfixturevalue(persona))
    response = client.post(BASE, {"pack_version_id": pack_version.pk, "deployment_ids": [deployment.pk]}, format="json")
    assert response.status_code == expected, response.content
    if expected == 201:
        body = response.json()
        assert body["status"] == "queued" and body["case_counts"]["total"] == 3
        assert body["lanes"][0]["deployment_name"] == "reader"
        assert tasks.names() == ["runs.run_start"]


@pytest.mark.django_db
@pytest.mark.parametrize("persona, expected", [("admin", 200), ("viewer", 200), ("stranger", 404)])
def test_reading_runs_needs_membership(request, api_client_for, finished_run, persona, expected):
    client = api_client_for(request.getfixturevalue(persona))
    for path in ("", f"/{finished_run.pk}", f"/{finished_run.pk}/cases", f"/{finished_run.pk}/events", f"/{finished_run.pk}/events.jsonl"):
        assert client.get(BASE + path).status_code == expected, path


@pytest.mark.django_db
def test_it_returns_a_run_with_lanes_and_case_counts(api_client_for, viewer, finished_run):
    body = api_client_for(viewer).get(f"{BASE}/{finished_run.pk}").json()
    assert body["status"] == "completed"
    assert body["case_counts"] == {"total": 3, "queued": 0, "running": 0, "completed": 3, "failed": 0, "cancelled": 0}
    assert [lane["status"] for lane in body["lanes"]] == ["completed"]


@pytest.mark.django_db
def test_it_lists_cases_filtered_by_lane(workspace, admin, api_client_for, pack_version, deployment, tasks):
    other = make_deployment(workspace, name="other")
    run = services.run_create(workspace=workspace, user=admin, pack_version=pack_version, deployment_ids=[deployment.pk, other.pk])
    tasks.drain()
    lane = run.lanes.get(label="other")
    body = api_client_for(admin).get(f"{BASE}/{run.pk}/cases?lane={lane.pk}").json()
    assert body["count"] == 3
    item = body["results"][0]
    assert set(item) >= {"id", "case_key", "lane_id", "deployment_name", "status", "stop_reason", "final_output", "passed", "score"}
    assert item["deployment_name"] == "other" and item["status"] == "completed"


@pytest.mark.django_db
def test_events_page_with_a_cursor(api_client_for, viewer, finished_run):
    client = api_client_for(viewer)
    first = client.get(f"{BASE}/{finished_run.pk}/events?limit=5").json()
    assert len(first["items"]) == 5
    rest = client.get(f"{BASE}/{finished_run.pk}/events?after={first['next_after']}&limit=1000").json()
    ids = [e["id"] for e in first["items"] + rest["items"]]
    assert ids == sorted(set(ids))
    assert all(e["id"] > first["next_after"] for e in rest["items"])
    assert first["items"][0]["schema_version"] == "2026-03-15"


@pytest.mark.django_db
def test_events_export_streams_json_lines(api_client_for, viewer, finished_run):
    response = api_client_for(viewer).get(f"{BASE}/{finished_run.pk}/events.jsonl")
    lines = b"".join(response.streaming_content).decode().strip().splitlines()
    assert lines and all(json.loads(line)["run_id"] == finished_run.pk for line in lines)


@pytest.mark.django_db
@pytest.mark.parametrize("persona, expected", [("member", 200), ("viewer", 403), ("stranger", 404)])
def test_cancel_needs_the_member_role(request, workspace, admin, api_client_for, pack_version, deployment, persona, expected):
    run = services.run_create(workspace=workspace, user=admin, pack_version=pack_version, deployment_ids=[deployment.pk])
    response = api_client_for(request.getfixturevalue(persona)).post(f"{BASE}/{run.pk}/cancel")
    assert response.status_code == expected
    run.refresh_from_db()
    assert run.status == (RunStatus.CANCELLED if expected == 200 else RunStatus.QUEUED)


@pytest.mark.django_db
def test_cancelling_a_finished_run_is_a_conflict(api_client_for, member, finished_run):
    response = api_client_for(member).post(f"{BASE}/{finished_run.pk}/cancel")
    assert response.status_code == 409
    error = response.json()["error"]
    assert error["code"] == "run_not_cancellable" and "can't be cancelled" in error["message"] and "fields" not in error


@pytest.mark.django_db
def test_it_refuses_deployments_of_another_workspace(api_client_for, member, pack_version, other_workspace):
    foreign = make_deployment(other_workspace)
    response = api_client_for(member).post(BASE, {"pack_version_id": pack_version.pk, "deployment_ids": [foreign.pk]}, format="json")
    assert response.status_code == 404


@pytest.mark.django_db
def test_it_refuses_an_archived_deployment(api_client_for, member, pack_version, workspace):
    archived = make_deployment(workspace, status="archived")
    response = api_client_for(member).post(BASE, {"pack_version_id": pack_version.pk, "deployment_ids": [archived.pk]}, format="json")
    assert response.status_code == 404


@pytest.mark.django_db
def test_it_refuses_a_pack_version_of_another_workspace(api_client_for, member, deployment, other_workspace, stranger):
    foreign = publish(other_workspace, stranger, native_pack_yaml(cases=1))
    response = api_client_for(member).post(BASE, {"pack_version_id": foreign.pk, "deployment_ids": [deployment.pk]}, format="json")
    assert response.status_code == 404


@pytest.mark.django_db
def test_it_requires_an_input_set_when_there_are_several(api_client_for, member, workspace, admin, deployment):
    source = native_pack_yaml(cases=1).replace(
        "input_sets:\n",
        "input_sets:\n  - key: second\n    name: Second\n    cases:\n      - challenge_key: notes\n        case_key: only\n",
        1,
    )
    version = publish(workspace, admin, source)
    response = api_client_for(member).post(BASE, {"pack_version_id": version.pk, "deployment_ids": [deployment.pk]}, format="json")
    assert response.status_code == 400
    assert "input set" in response.json()["error"]["message"]
    second = version.input_sets.get(key="second")
    response = api_client_for(member).post(
        BASE, {"pack_version_id": version.pk, "input_set_id": second.pk, "deployment_ids": [deployment.pk]}, format="json"
    )
    assert response.status_code == 201
    assert CaseRun.objects.filter(run_id=response.json()["id"]).count() == 1


@pytest.mark.django_db
def test_it_refuses_deployments_whose_runtime_profile_runs_another_mode(api_client_for, member, workspace, admin, deployment):
    version = publish(workspace, admin, native_pack_yaml(cases=1, mode="prompt_eval"))
    fitting = make_deployment(workspace, name="answerer", execution_target="prompt_eval")
    hosted = make_deployment(workspace, name="hosted", execution_target="hosted_external")
    client = api_client_for(member)
    response = client.post(BASE, {"pack_version_id": version.pk, "deployment_ids": [fitting.pk, deployment.pk]}, format="json")
    assert response.status_code == 400
    body = response.json()
    error = body["error"]
    assert error["code"] == "deployment_mode_mismatch" and list(error["fields"]) == ["deployment_ids"]
    assert body["deployments"] == ["reader"] and body["execution_mode"] == "prompt_eval"
    assert "This is a prompt_eval pack and reader (runtime profile" in error["message"]
    assert "execution target is prompt_eval" in error["message"]
    assert not Run.objects.exists()
    # A hosted agent takes any single-shot pack, not a responses (or multi-turn) one.
    assert client.post(BASE, {"pack_version_id": version.pk, "deployment_ids": [fitting.pk, hosted.pk]}, format="json").status_code == 201
    responses = publish(workspace, admin, native_pack_yaml(cases=1, mode="responses"))
    refused = client.post(BASE, {"pack_version_id": responses.pk, "deployment_ids": [hosted.pk]}, format="json").json()["error"]
    assert refused["code"] == "deployment_mode_mismatch" and "hosted is a hosted agent" in refused["message"]


@pytest.mark.django_db
def test_it_accepts_the_responses_execution_mode_for_a_scripted_deployment(api_client_for, member, workspace, admin):
    # docs/responses-mode.md; runs/tests/test_responses_and_race.py runs such packs end to end.
    deployment = make_deployment(workspace, execution_target="responses")
    version = publish(workspace, admin, native_pack_yaml(cases=1))
    type(version).objects.filter(pk=version.pk).update(execution_mode="responses")
    response = api_client_for(member).post(BASE, {"pack_version_id": version.pk, "deployment_ids": [deployment.pk]}, format="json")
    assert response.status_code == 201
    assert response.json()["execution_mode"] == "responses"


@pytest.mark.django_db
def test_it_asks_for_a_simulator_deployment_when_a_case_has_an_llm_actor(api_client_for, member, workspace, admin):
    deployment = make_deployment(workspace, execution_target="multi_turn")
    version = publish(workspace, admin, native_pack_yaml(cases=1))
    manifest = version.manifest
    manifest["input_sets"][0]["cases"][0]["user_simulator"] = {"phases": [{"actor": "llm", "key": "p"}]}
    type(version).objects.filter(pk=version.pk).update(execution_mode="multi_turn", manifest=manifest)
    response = api_client_for(member).post(BASE, {"pack_version_id": version.pk, "deployment_ids": [deployment.pk]}, format="json")
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "simulator_required"
    assert "simulator_deployment_id" in error["fields"]


@pytest.mark.django_db
def test_run_list_api_has_a_fixed_number_of_queries(
    workspace, admin, api_client_for, pack_version, deployment, django_assert_max_num_queries
):
    client = api_client_for(admin)
    services.run_create(workspace=workspace, user=admin, pack_version=pack_version, deployment_ids=[deployment.pk])
    with django_assert_max_num_queries(12) as few:
        client.get(BASE)
    for _ in range(4):
        services.run_create(workspace=workspace, user=admin, pack_version=pack_version, deployment_ids=[deployment.pk])
    with django_assert_max_num_queries(len(few.captured_queries)):
        client.get(BASE)


@pytest.mark.django_db
@pytest.mark.parametrize(
    "snapshot, shown",
    [
        ({"deployment": {"name": "reader-v2", "model": "gpt-4.1"}, "model": "gpt-4.1"}, ("reader-v2", "gpt-4.1")),
        ({"name": "old-reader", "model": "gpt-old", "provider_key": "openai"}, ("old-reader", "gpt-old")),  # before the split
        ({}, ("reader", "")),  # nothing recorded: the lane's label
    ],
)
def test_lanes_show_the_deployment_they_snapshotted(api_client_for, viewer, finished_run, snapshot, shown):
    Lane.objects.filter(run=finished_run).update(snapshot=snapshot, label="reader")
    lane = api_client_for(viewer).get(f"{BASE}/{finished_run.pk}").json()["lanes"][0]
    assert (lane["deployment_name"], lane["model"]) == shown

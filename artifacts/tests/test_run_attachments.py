"""Artifacts and runs: attach, store the exports, show them on the run page; assets reach the sandbox."""

from __future__ import annotations

import json

import pytest

from artifacts.models import Artifact, ArtifactKind
from artifacts.selectors import artifact_read
from artifacts.tests.factories import make_artifact
from runs import queue, services
from runs.models import CaseRun, CaseStatus, RunArtifact, RunStatus
from runs.tests.factories import make_deployment, native_pack_yaml, publish
from runs.tests.fixtures import TaskQueue

pytestmark = pytest.mark.django_db

BASE = "/api/v1/workspaces/acme"


@pytest.fixture
def tasks(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    captured = TaskQueue()
    queue.capture(captured.items)
    yield captured
    queue.capture(None)


@pytest.fixture
def finished_run(workspace, admin, tasks):
    version = publish(workspace, admin, native_pack_yaml(cases=2, slug="attach"))
    deployment = make_deployment(workspace, name="reader")
    run = services.run_create(workspace=workspace, user=admin, pack_version=version, deployment_ids=[deployment.pk])
    tasks.drain()
    run.refresh_from_db()
    assert run.status == RunStatus.COMPLETED, run.failure_reason
    return run


def test_a_member_attaches_an_artifact_once(api_client_for, member, workspace, finished_run):
    artifact = make_artifact(workspace, name="notes.md")
    url = f"{BASE}/runs/{finished_run.pk}/artifacts"
    client = api_client_for(member)
    first = client.post(url, {"artifact_id": str(artifact.pk)}, format="json")
    assert first.status_code == 201, first.content
    assert first.json()["artifact"]["id"] == str(artifact.pk)
    assert first.json()["attached_by"] == "bob"
    assert client.post(url, {"artifact_id": str(artifact.pk)}, format="json").status_code == 200
    assert RunArtifact.objects.filter(run=finished_run).count() == 1
    assert [row["artifact"]["name"] for row in client.get(url).json()["results"]] == ["notes.md"]


def test_a_viewer_lists_but_cannot_attach(api_client_for, viewer, workspace, finished_run):
    artifact = make_artifact(workspace)
    client = api_client_for(viewer)
    url = f"{BASE}/runs/{finished_run.pk}/artifacts"
    assert client.get(url).status_code == 200
    assert client.post(url, {"artifact_id": str(artifact.pk)}, format="json").status_code == 403
    assert client.post(f"{url}/exports").status_code == 403
    assert not RunArtifact.objects.exists()


def test_a_stranger_gets_404_and_cannot_attach_their_own_artifact(api_client_for, stranger, member, other_workspace, finished_run):
    theirs = make_artifact(other_workspace, stranger)
    url = f"{BASE}/runs/{finished_run.pk}/artifacts"
    assert api_client_for(stranger).get(url).status_code == 404
    assert api_client_for(stranger).post(f"{url}/exports").status_code == 404
    # A member of the run's workspace cannot attach another workspace's artifact either.
    assert api_client_for(member).post(url, {"artifact_id": str(theirs.pk)}, format="json").status_code == 404
    assert not RunArtifact.objects.exists()


def test_storing_the_exports_attaches_the_events_and_the_scorecards(api_client_for, member, finished_run):
    response = api_client_for(member).post(f"{BASE}/runs/{finished_run.pk}/artifacts/exports")
    assert response.status_code == 201, response.content
    names = [row["artifact"]["name"] for row in response.json()]
    assert names == [f"run-{finished_run.pk}-events.jsonl", f"run-{finished_run.pk}-scorecard.json"]
    events, scorecard = (Artifact.objects.get(pk=row["artifact"]["id"]) for row in response.json())
    assert (events.kind, events.content_type) == (ArtifactKind.RUN_EVENTS, "application/x-ndjson")
    exported = api_client_for(member).get(f"{BASE}/runs/{finished_run.pk}/events.jsonl")
    assert artifact_read(events) == b"".join(exported.streaming_content)
    document = json.loads(artifact_read(scorecard))
    assert document["run_id"] == finished_run.pk
    assert [lane["lane_id"] for lane in document["lane_scorecards"]] == [finished_run.lanes.get().pk]
    assert RunArtifact.objects.filter(run=finished_run).count() == 2


def test_the_run_page_lists_attached_artifacts(client_for, viewer, admin, workspace, finished_run):
    client = client_for(viewer)
    assert "No artifacts attached." in client.get(f"/w/acme/runs/{finished_run.pk}/").content.decode()
    artifact = make_artifact(workspace, name="ci-report.md")
    services.run_artifact_attach(run=finished_run, artifact=artifact, user=admin)
    html = client.get(f"/w/acme/runs/{finished_run.pk}/").content.decode()
    assert "ci-report.md" in html
    assert f"/w/acme/artifacts/{artifact.pk}/download/" in html


def test_an_artifact_backed_asset_is_in_the_sandbox_before_the_agent_starts(workspace, admin, tasks):
    data = make_artifact(workspace, admin, data=b"staged from an artifact\n", name="input.txt")
    assets = f"  assets:\n    - key: data\n      path: data/input.txt\n      artifact_id: {data.pk}\n"
    version = publish(workspace, admin, native_pack_yaml(cases=1, slug="staged", extra_version=assets))
    reader = make_deployment(
        workspace, script=[{"tool": "read_file", "args": {"path": "/workspace/data/input.txt"}}, {"submit": "{{last_result}}"}]
    )
    run = services.run_create(workspace=workspace, user=admin, pack_version=version, deployment_ids=[reader.pk])
    tasks.drain()
    case = CaseRun.objects.get(run=run)
    assert case.status == CaseStatus.COMPLETED, case.error
    assert "staged from an artifact" in case.final_output


def test_exports_past_the_run_quota_are_a_413_quota_exceeded(api_client_for, member, finished_run, settings):
    client = api_client_for(member)
    first = client.post(f"{BASE}/runs/{finished_run.pk}/artifacts/exports")
    stored = sum(Artifact.objects.get(pk=row["artifact"]["id"]).size_bytes for row in first.json())
    settings.ARTIFACT_BYTES_PER_RUN = stored * 3 // 2  # room for the first copy, not for a second
    again = client.post(f"{BASE}/runs/{finished_run.pk}/artifacts/exports")
    assert again.status_code == 413, again.content
    body = again.json()
    assert body["error"]["code"] == "quota_exceeded" and "ARTIFACT_BYTES_PER_RUN" in body["error"]["message"]
    assert body["quota"]["used"] == stored and body["quota"]["requested"] == stored
    assert RunArtifact.objects.filter(run=finished_run).count() == 2  # nothing of the refused copy

"""Artifacts API: upload, list, read, download; three personas; workspace isolation."""

from __future__ import annotations

import hashlib
import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from artifacts.models import Artifact, ArtifactKind
from artifacts.tests.factories import PNG, make_artifact
from workspaces.models import AuditEvent

BASE = "/api/v1/workspaces/acme/artifacts"

pytestmark = pytest.mark.django_db


def upload(client, data: bytes, filename: str, content_type: str = "application/octet-stream", **extra):
    return client.post(BASE, {"file": SimpleUploadedFile(filename, data, content_type=content_type), **extra}, format="multipart")


def test_a_member_uploads_a_file_and_the_type_comes_from_its_content(api_client_for, member, workspace, artifact_root):
    response = upload(api_client_for(member), PNG, "chart.png", content_type="text/html")
    assert response.status_code == 201, response.content
    body = response.json()
    artifact = Artifact.objects.get(pk=body["id"])
    assert artifact.workspace == workspace
    assert (body["name"], body["content_type"], body["size_bytes"], body["kind"]) == ("chart.png", "image/png", len(PNG), "upload")
    assert body["sha256"] == hashlib.sha256(PNG).hexdigest()
    assert body["created_by"] == "bob"
    assert body["download_url"] == f"{BASE}/{artifact.pk}/download"
    stored = artifact_root / artifact.storage_key
    assert stored.read_bytes() == PNG
    assert "chart" not in artifact.storage_key  # no user-supplied text in storage paths
    assert AuditEvent.objects.filter(workspace=workspace, action="artifact.created", target="chart.png").exists()


def test_the_name_field_overrides_and_is_sanitised(api_client_for, member):
    response = upload(api_client_for(member), b"x\n", "upload.bin", name="../../etc/notes.txt")
    assert response.status_code == 201, response.content
    assert response.json()["name"] == "notes.txt"


def test_a_viewer_cannot_upload(api_client_for, viewer):
    response = upload(api_client_for(viewer), b"x", "a.txt")
    assert response.status_code == 403
    assert not Artifact.objects.exists()


def test_a_stranger_gets_404_for_everything(api_client_for, stranger, workspace):
    artifact = make_artifact(workspace)
    client = api_client_for(stranger)
    assert upload(client, b"x", "a.txt").status_code == 404
    assert client.get(BASE).status_code == 404
    assert client.get(f"{BASE}/{artifact.pk}").status_code == 404
    assert client.get(f"{BASE}/{artifact.pk}/download").status_code == 404


def test_another_workspaces_artifact_is_404_even_for_its_own_members_url(api_client_for, stranger, member, other_workspace):
    theirs = make_artifact(other_workspace, stranger, data=b"secret plans\n")
    client = api_client_for(member)
    assert client.get(f"{BASE}/{theirs.pk}").status_code == 404
    response = client.get(f"{BASE}/{theirs.pk}/download")
    assert response.status_code == 404
    assert b"secret plans" not in response.content
    assert client.get(BASE).json()["results"] == []


@pytest.mark.parametrize(
    ("data", "name"),
    [(b"<html><body>hi</body></html>", "page.txt"), (b"hi", "page.html"), (b"<svg/>", "logo.svg"), (b"\x7fELF\x02", "tool")],
)
def test_it_refuses_html_svg_and_unknown_binaries_with_415(api_client_for, member, data, name):
    response = upload(api_client_for(member), data, name, content_type="text/plain")
    assert response.status_code == 415, response.content
    assert response.json()["error"]["code"] == "unsupported_media_type"
    assert not Artifact.objects.exists()


def test_it_refuses_a_file_over_the_limit_with_413_and_stores_nothing(api_client_for, member, settings, artifact_root):
    settings.ARTIFACT_MAX_BYTES = 100
    response = upload(api_client_for(member), b"x" * 101, "big.txt")
    assert response.status_code == 413
    assert response.json()["error"]["code"] == "payload_too_large"
    assert not Artifact.objects.exists()
    assert not artifact_root.exists() or not any(artifact_root.rglob("*.*"))


def test_it_refuses_a_body_far_over_the_limit_before_reading_it(api_client_for, member, settings):
    settings.ARTIFACT_MAX_BYTES = 10
    response = upload(api_client_for(member), b"x" * 200_000, "big.txt")
    assert response.status_code == 413
    assert "limit of 10 bytes" in response.json()["error"]["message"]


def test_it_needs_a_file(api_client_for, member):
    response = api_client_for(member).post(BASE, {}, format="multipart")
    assert response.status_code == 400
    assert "file" in response.json()["error"]["fields"]


def test_a_viewer_lists_reads_and_downloads(api_client_for, viewer, workspace):
    older = make_artifact(workspace, data=b'{"a": 1}', name="a.json")
    newer = make_artifact(workspace, data=PNG, name="b.png", kind=ArtifactKind.REPORT)
    client = api_client_for(viewer)
    listed = client.get(BASE).json()
    assert [row["id"] for row in listed["results"]] == [str(newer.pk), str(older.pk)]
    assert [row["id"] for row in client.get(BASE, {"kind": "report"}).json()["results"]] == [str(newer.pk)]
    assert client.get(BASE, {"kind": "nonsense"}).status_code == 400
    assert client.get(f"{BASE}/{older.pk}").json()["content_type"] == "application/json"
    response = client.get(f"{BASE}/{older.pk}/download")
    assert response.status_code == 200
    assert b"".join(response.streaming_content) == b'{"a": 1}'
    assert response["Content-Type"] == "application/json; charset=utf-8"
    assert response["Content-Disposition"] == 'attachment; filename="a.json"'
    assert response["X-Content-Type-Options"] == "nosniff"
    assert "sandbox" in response["Content-Security-Policy"]
    assert response["Content-Length"] == "8"


def test_a_download_with_an_unusual_name_is_still_an_attachment(api_client_for, member, workspace):
    artifact = make_artifact(workspace, name="rapport été.txt")
    response = api_client_for(member).get(f"{BASE}/{artifact.pk}/download")
    assert response["Content-Disposition"].startswith("attachment; filename*=utf-8''rapport%20%C3%A9t%C3%A9.txt")


def test_the_list_takes_a_fixed_number_of_queries(api_client_for, viewer, workspace, django_assert_max_num_queries):
    for i in range(5):
        make_artifact(workspace, name=f"f{i}.txt")
    client = api_client_for(viewer)
    client.get(BASE)  # warm the membership lookup's caches
    with django_assert_max_num_queries(5):
        response = client.get(BASE)
    assert len(response.json()["results"]) == 5


def test_unknown_ids_are_404(api_client_for, member):
    client = api_client_for(member)
    assert client.get(f"{BASE}/00000000-0000-4000-8000-000000000000").status_code == 404
    assert client.get(f"{BASE}/not-a-uuid").status_code == 404


def test_the_schema_documents_the_artifact_endpoints(api_client_for, member):
    response = api_client_for(member).get("/api/schema/", HTTP_ACCEPT="application/json")
    assert response.status_code == 200
    paths = json.loads(response.content)["paths"]
    for path in [
        "/api/v1/workspaces/{workspace_slug}/artifacts",
        "/api/v1/workspaces/{workspace_slug}/artifacts/{artifact_id}",
        "/api/v1/workspaces/{workspace_slug}/artifacts/{artifact_id}/download",
        "/api/v1/workspaces/{workspace_slug}/runs/{run_id}/artifacts",
        "/api/v1/workspaces/{workspace_slug}/runs/{run_id}/artifacts/exports",
    ]:
        assert path in paths, path
    assert "multipart/form-data" in paths["/api/v1/workspaces/{workspace_slug}/artifacts"]["post"]["requestBody"]["content"]

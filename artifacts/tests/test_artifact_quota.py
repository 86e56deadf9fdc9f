"""The workspace artifact quota (ARTIFACT_BYTES_PER_WORKSPACE): a 413 ``quota_exceeded`` naming the
budget, never a partial write; the admin shows each workspace's usage against it."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from artifacts.models import Artifact
from artifacts.storage import artifact_storage
from runs.models import WorkspaceUsage

pytestmark = pytest.mark.django_db

BASE = "/api/v1/workspaces/acme/artifacts"


def upload(client, data: bytes, name: str = "notes.txt"):
    return client.post(BASE, {"file": SimpleUploadedFile(name, data, content_type="text/plain")}, format="multipart")


def test_an_upload_past_the_workspace_quota_is_a_413_quota_exceeded(api_client_for, member, workspace, stranger, settings, tmp_path):
    settings.ARTIFACT_BYTES_PER_WORKSPACE = 100
    client = api_client_for(member)
    assert upload(client, b"a" * 60).status_code == 201
    refused = upload(client, b"b" * 41)
    assert refused.status_code == 413
    body = refused.json()
    assert body["error"]["code"] == "quota_exceeded" and "ARTIFACT_BYTES_PER_WORKSPACE" in body["error"]["message"]
    assert body["quota"] == {
        "budget": "workspace's artifact",
        "setting": "ARTIFACT_BYTES_PER_WORKSPACE",
        "limit": 100,
        "used": 60,
        "requested": 41,
    }
    assert Artifact.objects.filter(workspace=workspace).count() == 1
    assert upload(client, b"c" * 40).status_code == 201  # what still fits is stored
    assert upload(api_client_for(stranger), b"d" * 90, "theirs.txt").status_code == 404  # not a member here
    assert len(artifact_storage().listdir(f"workspaces/{workspace.pk}")[1]) == 2  # nothing written for the refused upload


def test_the_admin_shows_each_workspaces_usage_against_the_quota(client, django_user_model, api_client_for, member, workspace, settings):
    settings.ARTIFACT_BYTES_PER_WORKSPACE = 1000
    upload(api_client_for(member), b"x" * 250)
    operator = django_user_model.objects.create_superuser("op", "op@example.com", "pw-for-operator")
    client.force_login(operator)
    page = client.get(reverse("admin:runs_workspaceusage_changelist"))
    assert page.status_code == 200
    text = page.content.decode()
    assert "250\xa0bytes" in text and "25.0 % used" in text
    assert client.get(reverse("admin:runs_workspaceusage_change", args=[workspace.pk])).status_code == 200
    assert WorkspaceUsage.objects.get(pk=workspace.pk).name == workspace.name  # a view of the workspace, no table of its own

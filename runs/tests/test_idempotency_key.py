"""``Idempotency-Key`` on POST …/runs, …/packs/publish and …/artifacts: the first answer is
replayed to a retry with the same key and body; another body is a 409; a refusal is not stored."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from artifacts.models import Artifact
from packs.models import PackVersion
from packs.tests.factories import bundle_yaml
from runs.models import Run
from workspaces.models import IdempotentRequest

pytestmark = pytest.mark.django_db

API = "/api/v1/workspaces/acme"


def start(client, body, key):
    return client.post(f"{API}/runs", body, format="json", HTTP_IDEMPOTENCY_KEY=key)


def test_the_same_key_and_body_replay_the_first_run_instead_of_starting_another(api_client_for, member, pack_version, deployment):
    body = {"pack_version_id": pack_version.pk, "deployment_ids": [deployment.pk]}
    first = start(api_client_for(member), body, "ci-42")
    again = start(api_client_for(member), {"deployment_ids": [deployment.pk], "pack_version_id": pack_version.pk}, "ci-42")
    assert first.status_code == 201 and "Idempotent-Replayed" not in first
    assert again.status_code == 201 and again["Idempotent-Replayed"] == "true"
    assert again.json() == first.json()
    assert Run.objects.filter(workspace__slug="acme").count() == 1
    fresh = start(api_client_for(member), body, "ci-43")
    assert fresh.status_code == 201 and fresh.json()["id"] != first.json()["id"]


def test_the_same_key_with_another_body_is_a_409_naming_the_header(api_client_for, member, pack_version, deployment):
    start(api_client_for(member), {"pack_version_id": pack_version.pk, "deployment_ids": [deployment.pk]}, "k1")
    other = start(api_client_for(member), {"pack_version_id": pack_version.pk, "deployment_ids": [deployment.pk], "name": "x"}, "k1")
    assert other.status_code == 409
    assert other.json()["error"]["code"] == "idempotency_key_reused" and "Idempotency-Key" in other.json()["error"]["fields"]
    assert Run.objects.count() == 1


def test_keys_belong_to_their_user(api_client_for, member, admin, pack_version, deployment):
    body = {"pack_version_id": pack_version.pk, "deployment_ids": [deployment.pk]}
    assert start(api_client_for(member), body, "shared").status_code == 201
    theirs = start(api_client_for(admin), body, "shared")
    assert theirs.status_code == 201 and "Idempotent-Replayed" not in theirs
    assert Run.objects.count() == 2


def test_a_refused_request_is_not_stored_so_a_corrected_retry_runs(api_client_for, member, pack_version, deployment):
    refused = start(api_client_for(member), {"pack_version_id": pack_version.pk, "deployment_ids": []}, "k2")
    assert refused.status_code == 400
    assert not IdempotentRequest.objects.exists()
    fixed = start(api_client_for(member), {"pack_version_id": pack_version.pk, "deployment_ids": [deployment.pk]}, "k2")
    assert fixed.status_code == 201 and Run.objects.count() == 1


def test_a_key_expires_after_a_day(api_client_for, member, pack_version, deployment):
    body = {"pack_version_id": pack_version.pk, "deployment_ids": [deployment.pk]}
    start(api_client_for(member), body, "old")
    IdempotentRequest.objects.update(created_at=IdempotentRequest.objects.get().created_at - timedelta(hours=25))
    again = start(api_client_for(member), body, "old")
    assert again.status_code == 201 and "Idempotent-Replayed" not in again
    assert Run.objects.count() == 2 and IdempotentRequest.objects.count() == 1


@pytest.mark.parametrize("key", ["", "x" * 256, "bad key", "é"])
def test_a_malformed_key_is_a_400_naming_the_header(api_client_for, member, pack_version, deployment, key):
    response = start(api_client_for(member), {"pack_version_id": pack_version.pk, "deployment_ids": [deployment.pk]}, key)
    assert response.status_code == 400 and "Idempotency-Key" in response.json()["error"]["fields"]
    assert not Run.objects.exists()


def test_publish_replays_its_first_version(api_client_for, member, workspace):
    client = api_client_for(member)

    def publish(source):
        return client.generic("POST", f"{API}/packs/publish", source.encode(), content_type="text/yaml", HTTP_IDEMPOTENCY_KEY="pub-1")

    first, again = publish(bundle_yaml(number=1)), publish(bundle_yaml(number=1))
    assert first.status_code == 201 and again.status_code == 201 and again["Idempotent-Replayed"] == "true"
    assert again.json()["pack_version_id"] == first.json()["pack_version_id"]
    assert PackVersion.objects.filter(pack__workspace=workspace).count() == 1
    assert publish(bundle_yaml(number=2)).status_code == 409


def test_an_upload_replays_its_first_artifact(api_client_for, member, workspace):
    client = api_client_for(member)

    def upload(data):
        file = SimpleUploadedFile("notes.txt", data, content_type="text/plain")
        return client.post(f"{API}/artifacts", {"file": file}, format="multipart", HTTP_IDEMPOTENCY_KEY="up-1")

    first, again = upload(b"hello"), upload(b"hello")
    assert first.status_code == 201 and again.status_code == 201 and again["Idempotent-Replayed"] == "true"
    assert again.json()["id"] == first.json()["id"]
    assert Artifact.objects.filter(workspace=workspace).count() == 1
    assert upload(b"other bytes").status_code == 409

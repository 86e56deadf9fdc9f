"""Packs and artifacts: publishing keeps the raw YAML; asset artifact_ids must name an artifact of
the workspace and are staged into the case's sandbox."""

from __future__ import annotations

import uuid

import pytest

from artifacts.models import Artifact, ArtifactKind
from artifacts.selectors import AssetUnavailable, artifact_read, bundle_artifact_for, staged_asset_files
from artifacts.tests.factories import make_artifact
from packs import services as pack_services
from packs.models import PackVersion
from runs.tests.factories import native_pack_yaml

pytestmark = pytest.mark.django_db

BASE = "/api/v1/workspaces/acme"


def with_asset(artifact_id: str, *, slug: str = "assets-pack") -> str:
    assets = f"  assets:\n    - key: data\n      kind: fixture\n      path: data/input.csv\n      artifact_id: {artifact_id}\n"
    return native_pack_yaml(slug=slug, extra_version=assets)


def test_publishing_stores_the_raw_yaml_as_an_artifact(workspace, member):
    source = native_pack_yaml(slug="kept")
    version = pack_services.pack_publish(workspace=workspace, user=member, source=source)
    artifact = bundle_artifact_for(workspace=workspace, pack_version_id=version.pk)
    assert artifact is not None
    assert (artifact.kind, artifact.name, artifact.content_type) == (ArtifactKind.PACK_BUNDLE, "kept-v1.yaml", "application/yaml")
    assert artifact_read(artifact) == source.encode()
    assert artifact.metadata == {
        "pack_id": version.pack_id,
        "pack_version_id": version.pk,
        "pack_slug": "kept",
        "pack_name": "Notes kept",
        "version_number": 1,
    }
    assert artifact.created_by == member


def test_the_publish_api_returns_the_bundle_artifact_id(api_client_for, member, workspace):
    response = api_client_for(member).generic(
        "POST", f"{BASE}/packs/publish", native_pack_yaml(slug="api-kept").encode(), content_type="text/yaml"
    )
    assert response.status_code == 201, response.content
    artifact = Artifact.objects.get(pk=response.json()["bundle_artifact_id"])
    assert artifact.workspace == workspace
    assert artifact.metadata["pack_version_id"] == response.json()["pack_version_id"]


def test_a_failed_publish_stores_no_artifact(workspace, member):
    with pytest.raises(pack_services.PackInvalid):
        pack_services.pack_publish(workspace=workspace, user=member, source="pack: {}\n")
    assert not Artifact.objects.exists()


def test_an_asset_may_reference_an_artifact_of_the_workspace(workspace, member):
    data = make_artifact(workspace, member, data=b"a,b\n1,2\n", name="input.csv")
    version = pack_services.pack_publish(workspace=workspace, user=member, source=with_asset(str(data.pk)))
    assert version.manifest["version"]["assets"][0]["artifact_id"] == str(data.pk)


@pytest.mark.parametrize("which", ["unknown", "other_workspace"])
def test_publishing_refuses_an_asset_whose_artifact_is_missing_or_elsewhere(api_client_for, member, stranger, other_workspace, which):
    artifact_id = str(uuid.uuid4()) if which == "unknown" else str(make_artifact(other_workspace, stranger).pk)
    response = api_client_for(member).generic("POST", f"{BASE}/packs/publish", with_asset(artifact_id).encode(), content_type="text/yaml")
    assert response.status_code == 400, response.content
    assert response.json()["errors"] == [
        {"field": "version.assets[0].artifact_id", "message": "must reference an existing artifact", "line": None}
    ]
    assert not PackVersion.objects.exists()


def test_case_and_challenge_assets_are_checked_too(workspace, member):
    missing = str(uuid.uuid4())
    source = native_pack_yaml(slug="deep").replace(
        "    instructions: Read notes.txt and submit its content.\n",
        f"    instructions: Read notes.txt and submit its content.\n    assets:\n      - key: extra\n        path: extra.txt\n        artifact_id: {missing}\n",
    )
    with pytest.raises(pack_services.PackInvalid) as caught:
        pack_services.pack_publish(workspace=workspace, user=member, source=source)
    assert [e["field"] for e in caught.value.errors] == ["challenges[0].assets[0].artifact_id"]


def test_staging_writes_artifact_backed_assets_at_their_paths(workspace, member, other_workspace):
    data = make_artifact(workspace, member, data=b"a,b\n", name="input.csv")
    files = staged_asset_files(
        workspace_id=workspace.pk,
        asset_groups=[[{"key": "d", "path": "data/input.csv", "artifact_id": str(data.pk)}], None, [{"key": "plain", "path": "x.txt"}]],
    )
    assert files == {"/workspace/data/input.csv": b"a,b\n"}
    with pytest.raises(AssetUnavailable):
        staged_asset_files(workspace_id=other_workspace.pk, asset_groups=[[{"key": "d", "path": "p", "artifact_id": str(data.pk)}]])

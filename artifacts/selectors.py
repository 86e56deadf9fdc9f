"""Reads for artifacts. Another workspace's artifact is a 404 (workspaces/access.py)."""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Iterator
from typing import IO, Any

from django.db.models import QuerySet

from artifacts.models import Artifact, ArtifactKind
from artifacts.storage import artifact_storage
from core.errors import DomainError
from workspaces.access import object_get_for_workspace
from workspaces.models import Workspace

# Worker-side cap on what one case may stage from artifact-backed assets (spec runtime.md §1.3).
ASSET_STAGE_MAX_BYTES = 100 * 1024 * 1024


class AssetUnavailable(DomainError):
    """An asset's artifact cannot be staged (gone, or too large)."""

    default_code = "asset_unavailable"


def artifact_list(*, workspace: Workspace, kind: str = "") -> QuerySet[Artifact]:
    artifacts = Artifact.objects.filter(workspace=workspace).select_related("created_by", "workspace")
    if kind:
        artifacts = artifacts.filter(kind=kind)
    return artifacts.order_by("-created_at", "name")


def artifact_get(*, workspace: Workspace, pk: Any) -> Artifact:
    return object_get_for_workspace(Artifact.objects.select_related("created_by", "workspace"), workspace=workspace, pk=pk)


def artifact_open(artifact: Artifact) -> IO[bytes]:
    return artifact_storage().open(artifact.storage_key, "rb")


def artifact_read(artifact: Artifact) -> bytes:
    with artifact_open(artifact) as handle:
        return handle.read()


def bundle_artifact_for(*, workspace: Workspace, pack_version_id: int) -> Artifact | None:
    """The raw YAML stored when this pack version was published (None for older versions)."""
    return (
        Artifact.objects.filter(workspace=workspace, kind=ArtifactKind.PACK_BUNDLE, metadata__pack_version_id=pack_version_id)
        .order_by("created_at")
        .first()
    )


def _as_uuid(value: Any) -> uuid.UUID | None:
    try:
        return uuid.UUID(str(value))
    except (TypeError, ValueError, AttributeError):
        return None


def artifacts_by_id(*, workspace: Workspace, ids: Iterable[Any]) -> dict[str, Artifact]:
    """``{str(uuid): artifact}`` for the ids that name an artifact of this workspace."""
    wanted = {u for u in (_as_uuid(i) for i in ids) if u is not None}
    if not wanted:
        return {}
    return {str(a.pk): a for a in Artifact.objects.filter(workspace=workspace, pk__in=wanted)}


def asset_lists(manifest: dict[str, Any]) -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """Every asset list of a manifest with its bundle path (version, challenges, cases; spec §2.10)."""
    version_assets = (manifest.get("version") or {}).get("assets")
    if isinstance(version_assets, list):
        yield "version.assets", version_assets
    for i, challenge in enumerate(manifest.get("challenges") or []):
        if isinstance(challenge, dict) and isinstance(challenge.get("assets"), list):
            yield f"challenges[{i}].assets", challenge["assets"]
    for i, input_set in enumerate(manifest.get("input_sets") or []):
        for j, case in enumerate((input_set or {}).get("cases") or []):
            if isinstance(case, dict) and isinstance(case.get("assets"), list):
                yield f"input_sets[{i}].cases[{j}].assets", case["assets"]


def asset_artifact_errors(*, workspace: Workspace, manifest: dict[str, Any]) -> list[dict[str, Any]]:
    """Publish-only check (spec §1.1 step 6, §3.9): every asset ``artifact_id`` names an artifact
    of this workspace. Another workspace's artifact reads as missing: existence never leaks."""
    refs = [
        (f"{path}[{k}].artifact_id", asset["artifact_id"])
        for path, assets in asset_lists(manifest)
        for k, asset in enumerate(assets)
        if isinstance(asset, dict) and asset.get("artifact_id")
    ]
    found = artifacts_by_id(workspace=workspace, ids=[ref for _, ref in refs])
    return [
        {"field": field, "message": "must reference an existing artifact", "line": None}
        for field, ref in refs
        if str(_as_uuid(ref)) not in found
    ]


def staged_asset_files(*, workspace_id: int, asset_groups: Iterable[list[dict[str, Any]] | None]) -> dict[str, bytes]:
    """``{sandbox path: bytes}`` of every artifact-backed asset (spec runtime.md §1.3).

    Relative paths are under ``/workspace``. A missing artifact or one over the cap raises
    AssetUnavailable: a case must not start without the files its pack promised.
    """
    refs: list[tuple[str, str]] = []
    for assets in asset_groups:
        for asset in assets or []:
            if isinstance(asset, dict) and asset.get("artifact_id") and str(asset.get("path") or "").strip():
                path = str(asset["path"]).strip()
                refs.append((path if path.startswith("/") else f"/workspace/{path}", str(asset["artifact_id"])))
    if not refs:
        return {}
    wanted = {u for u in (_as_uuid(r) for _, r in refs) if u is not None}
    found = {str(a.pk): a for a in Artifact.objects.filter(workspace_id=workspace_id, pk__in=wanted)}
    files: dict[str, bytes] = {}
    total = 0
    for path, ref in refs:
        artifact = found.get(str(_as_uuid(ref)))
        if artifact is None:
            raise AssetUnavailable(f"asset at {path}: artifact {ref} does not exist in this workspace")
        total += artifact.size_bytes
        if total > ASSET_STAGE_MAX_BYTES:
            raise AssetUnavailable(f"artifact-backed assets exceed {ASSET_STAGE_MAX_BYTES} bytes")
        files[path] = artifact_read(artifact)
    return files

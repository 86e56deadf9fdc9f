"""Writes for artifacts: store a file once it passed the size limit and the content sniffing."""

from __future__ import annotations

import io
import uuid
from collections.abc import Iterable
from typing import IO, Any

from django.conf import settings
from django.core.files import File
from django.db import transaction
from django.db.models import Sum

from artifacts.content import ContentRefused, Sniffer, safe_filename
from artifacts.models import Artifact, ArtifactKind
from artifacts.storage import artifact_storage, storage_key
from core.actors import actor_or_none
from core.errors import QuotaExceeded
from workspaces.models import Workspace
from workspaces.services import audit_record

CHUNK_BYTES = 64 * 1024

__all__ = ["ContentRefused", "artifact_create", "artifact_create_from_bytes", "max_bytes"]


def max_bytes() -> int:
    return int(settings.ARTIFACT_MAX_BYTES)


def artifact_bytes_used(*, workspace: Workspace) -> int:
    return int(Artifact.objects.filter(workspace=workspace).aggregate(total=Sum("size_bytes"))["total"] or 0)


def _quota_check(workspace: Workspace, size: int) -> None:
    """Refuse ``size`` more bytes past ``ARTIFACT_BYTES_PER_WORKSPACE``. The workspace row is locked
    until the caller's transaction ends, so two uploads cannot both fit in the last free bytes."""
    limit = int(settings.ARTIFACT_BYTES_PER_WORKSPACE)
    Workspace.objects.select_for_update().filter(pk=workspace.pk).first()
    used = artifact_bytes_used(workspace=workspace)
    if used + size > limit:
        raise QuotaExceeded(
            budget="workspace's artifact", setting="ARTIFACT_BYTES_PER_WORKSPACE", limit=limit, used=used, size=size, field="file"
        )


def _chunks(stream: IO[bytes]) -> Iterable[bytes]:
    while True:
        chunk = stream.read(CHUNK_BYTES)
        if not chunk:
            return
        yield chunk


@transaction.atomic
def artifact_create(
    *,
    workspace: Workspace,
    user: Any,
    stream: IO[bytes],
    name: str,
    kind: str = ArtifactKind.UPLOAD,
    metadata: dict[str, Any] | None = None,
) -> Artifact:
    """Store ``stream`` (seekable) as an artifact of ``workspace``; raises ContentRefused.

    The bytes are read twice — once to size, hash and sniff them, once into storage — so nothing
    reaches storage before it has been checked.
    """
    filename = safe_filename(name)
    sniffer = Sniffer(max_bytes=max_bytes())
    stream.seek(0)
    for chunk in _chunks(stream):
        sniffer.feed(chunk)
    content_type = sniffer.content_type(filename)
    _quota_check(workspace, sniffer.size)
    artifact_id = uuid.uuid4()
    stream.seek(0)
    key = artifact_storage().save(storage_key(workspace_id=workspace.pk, artifact_id=str(artifact_id)), File(stream, name=filename))
    artifact = Artifact(
        id=artifact_id,
        workspace=workspace,
        kind=kind,
        name=filename,
        content_type=content_type,
        size_bytes=sniffer.size,
        sha256=sniffer.sha256,
        storage_key=key,
        metadata=metadata or {},
        created_by=actor_or_none(user),
    )
    try:
        artifact.full_clean()
        artifact.save(force_insert=True)
    except Exception:
        # Storage is not transactional: don't leave the bytes of a row that was never written.
        artifact_storage().delete(key)
        raise
    audit_record(
        workspace=workspace,
        actor=user,
        action="artifact.created",
        target=filename,
        metadata={"artifact_id": str(artifact.pk), "kind": kind, "size_bytes": sniffer.size, "content_type": content_type},
    )
    return artifact


def artifact_create_from_bytes(
    *, workspace: Workspace, user: Any, data: bytes, name: str, kind: str, metadata: dict[str, Any] | None = None
) -> Artifact:
    """Store bytes the server produced itself (a published bundle, a run export)."""
    return artifact_create(workspace=workspace, user=user, stream=io.BytesIO(data), name=name, kind=kind, metadata=metadata)

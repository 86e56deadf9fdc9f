"""Test data for artifacts."""

from __future__ import annotations

from typing import Any

from artifacts.models import Artifact, ArtifactKind
from artifacts.services import artifact_create_from_bytes
from workspaces.models import Workspace

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00\x00\x00\rIHDR" + b"\x00" * 40


def make_artifact(
    workspace: Workspace, user: Any = None, *, data: bytes = b"hello\n", name: str = "notes.txt", kind: str = ArtifactKind.UPLOAD
) -> Artifact:
    return artifact_create_from_bytes(workspace=workspace, user=user, data=data, name=name, kind=kind)

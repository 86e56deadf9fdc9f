"""The one way artifact bytes leave the server (API and pages alike)."""

from __future__ import annotations

from django.http import FileResponse

from artifacts.content import ALLOWED_CONTENT_TYPES, TEXT_TYPES
from artifacts.models import Artifact
from artifacts.selectors import artifact_open

# Whatever a row says, nothing outside the allowlist is ever sent as its own type.
_FALLBACK = "application/octet-stream"


def served_content_type(artifact: Artifact) -> str:
    content_type = artifact.content_type if artifact.content_type in ALLOWED_CONTENT_TYPES else _FALLBACK
    return f"{content_type}; charset=utf-8" if content_type in TEXT_TYPES else content_type


def download_response(artifact: Artifact) -> FileResponse:
    """Always an attachment, with the sniffed type, no sniffing by the browser and no scripts."""
    response = FileResponse(artifact_open(artifact), as_attachment=True, filename=artifact.name, content_type=served_content_type(artifact))
    response["Content-Length"] = str(artifact.size_bytes)
    response["X-Content-Type-Options"] = "nosniff"
    response["Content-Security-Policy"] = "default-src 'none'; sandbox"
    response["Cache-Control"] = "private, no-store"
    response["X-Artifact-SHA256"] = artifact.sha256
    return response

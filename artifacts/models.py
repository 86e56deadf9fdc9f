"""Files a workspace keeps: uploads, published bundles, run exports (docs/artifacts.md).

The bytes live in the ``artifacts`` storage (artifacts/storage.py) under ``storage_key``; the row
holds what was checked on the way in (sniffed content type, size, SHA-256). Rows are immutable.
The UUID is the ``artifact_id`` pack assets reference (spec pack-format.md §2.10).
"""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models


class ArtifactKind(models.TextChoices):
    UPLOAD = "upload", "Upload"
    PACK_BUNDLE = "pack_bundle", "Pack bundle"
    RUN_EVENTS = "run_events", "Run events"
    SCORECARD = "scorecard", "Scorecard"
    REPORT = "report", "Report"


class Artifact(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    workspace = models.ForeignKey("workspaces.Workspace", on_delete=models.CASCADE, related_name="artifacts")
    kind = models.CharField(max_length=32, choices=ArtifactKind.choices, default=ArtifactKind.UPLOAD)
    name = models.CharField(max_length=255, help_text="Sanitised file name, used for downloads.")
    content_type = models.CharField(max_length=100, help_text="Sniffed from the content, never taken from the client.")
    size_bytes = models.PositiveBigIntegerField()
    sha256 = models.CharField(max_length=64)
    storage_key = models.CharField(max_length=500, unique=True)
    metadata = models.JSONField(default=dict, blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [
            models.Index(fields=["workspace", "-created_at"], name="artifact_ws_created"),
            models.Index(fields=["workspace", "kind"], name="artifact_ws_kind"),
        ]

    def __str__(self) -> str:
        return self.name

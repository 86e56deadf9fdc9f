"""Output shape of an artifact (API and the run attachments reuse it)."""

from __future__ import annotations

from django.urls import reverse
from rest_framework import serializers

from artifacts.models import Artifact


class ArtifactOutputSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    name = serializers.CharField()
    kind = serializers.CharField()
    content_type = serializers.CharField(help_text="Sniffed from the content when it was stored.")
    size_bytes = serializers.IntegerField()
    sha256 = serializers.CharField()
    metadata = serializers.JSONField()
    created_by = serializers.CharField(source="created_by.username", default=None, allow_null=True)
    created_at = serializers.DateTimeField()
    download_url = serializers.SerializerMethodField()

    def get_download_url(self, artifact: Artifact) -> str:
        return reverse("api-artifact-download", args=[artifact.workspace.slug, artifact.pk])

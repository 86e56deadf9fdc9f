from __future__ import annotations

from django.contrib import admin

from artifacts.models import Artifact
from core.admin import ReadOnlyAdmin


@admin.register(Artifact)
class ArtifactAdmin(ReadOnlyAdmin):
    list_display = ("name", "workspace", "kind", "content_type", "size_bytes", "created_by", "created_at")
    list_filter = ("kind", "content_type")
    search_fields = ("name", "sha256", "workspace__slug")
    list_select_related = ("workspace", "created_by")

"""Artifacts API under /api/v1/workspaces/<slug>/."""

from __future__ import annotations

from django.urls import path

from artifacts.api import views

urlpatterns = [
    path("artifacts", views.ArtifactListApi.as_view(), name="api-artifact-list"),
    path("artifacts/<uuid:artifact_id>", views.ArtifactDetailApi.as_view(), name="api-artifact-detail"),
    path("artifacts/<uuid:artifact_id>/download", views.ArtifactDownloadApi.as_view(), name="api-artifact-download"),
]

"""Every API path, under /api/v1/. Each app contributes its own list."""

from __future__ import annotations

from django.urls import include, path

urlpatterns = [
    path("", include("workspaces.api.urls")),
    path("", include("infrastructure.api.global_urls")),
    path("workspaces/<slug:workspace_slug>/", include("infrastructure.api.urls")),
    path("workspaces/<slug:workspace_slug>/", include("secrets_app.api.urls")),
    path("workspaces/<slug:workspace_slug>/", include("artifacts.api.urls")),
    path("workspaces/<slug:workspace_slug>/", include("packs.api.urls")),
    path("workspaces/<slug:workspace_slug>/", include("runs.api.urls")),
    path("workspaces/<slug:workspace_slug>/", include("regression.api.urls")),
    path("workspaces/<slug:workspace_slug>/", include("scoring.api.urls")),
    path("workspaces/<slug:workspace_slug>/", include("comparisons.api.urls")),
]

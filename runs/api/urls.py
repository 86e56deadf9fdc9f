from __future__ import annotations

from django.urls import path, re_path

from runs.api import artifact_views, share_views, views

urlpatterns = [
    path("runs", views.RunCollectionApi.as_view(), name="api-run-list"),
    path("runs/<int:run_id>", views.RunDetailApi.as_view(), name="api-run-detail"),
    path("runs/<int:run_id>/cases", views.RunCaseListApi.as_view(), name="api-run-cases"),
    path("runs/<int:run_id>/events", views.RunEventListApi.as_view(), name="api-run-events"),
    path("runs/<int:run_id>/events.jsonl", views.RunEventExportApi.as_view(), name="api-run-events-export"),
    re_path(r"^runs/(?P<run_id>[0-9]+)/results\.(?P<kind>csv|json)$", views.RunResultsExportApi.as_view(), name="api-run-results"),
    path("runs/<int:run_id>/cancel", views.RunCancelApi.as_view(), name="api-run-cancel"),
    path("runs/<int:run_id>/shares", share_views.RunShareListApi.as_view(), name="api-run-shares"),
    path("runs/<int:run_id>/shares/<int:share_id>", share_views.RunShareDetailApi.as_view(), name="api-run-share"),
    path("runs/<int:run_id>/artifacts", artifact_views.RunArtifactListApi.as_view(), name="api-run-artifacts"),
    path("runs/<int:run_id>/artifacts/exports", artifact_views.RunExportsStoreApi.as_view(), name="api-run-artifacts-exports"),
]

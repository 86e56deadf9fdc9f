"""Scorecard API under /api/v1/workspaces/<slug>/."""

from __future__ import annotations

from django.urls import path

from scoring.api import views

urlpatterns = [
    path("runs/<int:run_id>/scorecard", views.RunScorecardApi.as_view(), name="api-run-scorecard"),
    path("runs/<int:run_id>/lanes/<int:lane_id>/scorecard", views.LaneScorecardApi.as_view(), name="api-lane-scorecard"),
    path("runs/<int:run_id>/cases/<int:case_run_id>/verdicts", views.CaseVerdictsApi.as_view(), name="api-case-verdicts"),
]

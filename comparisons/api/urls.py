"""Comparison and release-gate API under /api/v1/workspaces/<slug>/."""

from __future__ import annotations

from django.urls import path

from comparisons.api import views

urlpatterns = [
    path("comparisons", views.ComparisonListApi.as_view(), name="api-comparisons"),
    path("comparisons/<int:comparison_id>", views.ComparisonDetailApi.as_view(), name="api-comparison-detail"),
    path("comparisons/<int:comparison_id>/gate", views.ComparisonGateEvaluateApi.as_view(), name="api-comparison-gate"),
    path("gates", views.GateListApi.as_view(), name="api-gates"),
]

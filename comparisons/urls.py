from __future__ import annotations

from django.urls import path

from comparisons import views

app_name = "comparisons"

urlpatterns = [
    path("comparisons/", views.comparisons, name="list"),
    path("comparisons/lanes/", views.comparison_lanes, name="lanes"),
    path("comparisons/<int:comparison_id>/", views.comparison_detail, name="detail"),
    path("comparisons/<int:comparison_id>/gate/", views.comparison_gate, name="gate"),
    path("gates/", views.gates, name="gates"),
]

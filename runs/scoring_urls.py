from __future__ import annotations

from django.urls import path

from runs import scoring_views as views

app_name = "scoring"

urlpatterns = [
    path("runs/<int:run_pk>/scorecard/", views.run_scorecard, name="run_scorecard"),
    path("runs/<int:run_pk>/lanes/<int:lane_pk>/scorecard/", views.lane_scorecard, name="lane_scorecard"),
    path("runs/<int:run_pk>/lanes/<int:lane_pk>/scorecard.json", views.lane_scorecard_json, name="lane_scorecard_json"),
    path("comparisons/", views.comparisons, name="comparisons"),
    path("comparisons/lanes/", views.comparison_lanes, name="comparison_lanes"),
    path("comparisons/<int:pk>/", views.comparison_detail, name="comparison_detail"),
    path("comparisons/<int:pk>/gate/", views.comparison_gate, name="comparison_gate"),
    path("gates/", views.gates, name="gates"),
]

from __future__ import annotations

from django.urls import path

from scoring import views

app_name = "scoring"

urlpatterns = [
    path("runs/<int:run_id>/scorecard/", views.run_scorecard, name="run_scorecard"),
    path("runs/<int:run_id>/lanes/<int:lane_id>/scorecard/", views.lane_scorecard, name="lane_scorecard"),
    path("runs/<int:run_id>/lanes/<int:lane_id>/scorecard.json", views.lane_scorecard_json, name="lane_scorecard_json"),
    path("packs/<int:pack_id>/results/", views.pack_results, name="pack_results"),
]

from __future__ import annotations

from django.urls import path

from agentclash.placeholders import not_available

app_name = "scoring"

urlpatterns = [
    path("comparisons/", not_available("Comparisons"), name="comparisons"),
    path("gates/", not_available("Release gates"), name="gates"),
]

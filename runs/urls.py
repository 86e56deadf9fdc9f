from __future__ import annotations

from django.urls import path

from agentclash.placeholders import not_available

app_name = "runs"

urlpatterns = [
    path("runs/", not_available("Runs"), name="list"),
]

from __future__ import annotations

from django.urls import path

from agentclash.placeholders import not_available

app_name = "packs"

urlpatterns = [
    path("", not_available("Packs"), name="list"),
    path("library/", not_available("Pack library"), name="library"),
]

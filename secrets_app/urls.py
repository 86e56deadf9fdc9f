from __future__ import annotations

from django.urls import path

from agentclash.placeholders import not_available

app_name = "secrets_app"

urlpatterns = [
    path("", not_available("Secrets"), name="list"),
]

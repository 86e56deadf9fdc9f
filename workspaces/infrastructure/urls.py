from __future__ import annotations

from django.urls import path

from agentclash.placeholders import not_available

app_name = "infra"

urlpatterns = [
    path("provider-accounts/", not_available("Provider accounts"), name="provider_accounts"),
    path("runtime-profiles/", not_available("Runtime profiles"), name="runtime_profiles"),
    path("deployments/", not_available("Deployments"), name="deployments"),
    path("tool-resources/", not_available("Tool resources"), name="tool_resources"),
    path("primitives/", not_available("Primitive catalogue"), name="primitives"),
]

"""API paths of the infrastructure area that are not workspace-scoped (mounted at /api/v1/)."""

from __future__ import annotations

from django.urls import path

from infrastructure.api import views

urlpatterns = [
    path("primitives", views.PrimitiveListApi.as_view(), name="api-primitive-list"),
]

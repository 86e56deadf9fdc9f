"""API paths of the infrastructure area that are not workspace-scoped (mounted at /api/v1/)."""

from __future__ import annotations

from django.urls import path

from infrastructure.api import views

urlpatterns = [
    path("primitives", views.PrimitiveListApi.as_view(), name="api-primitive-list"),
    path("sandbox-templates", views.SandboxTemplateListApi.as_view(), name="api-sandbox-template-list"),
    path("sandbox-templates/<slug:template_id>", views.SandboxTemplateDetailApi.as_view(), name="api-sandbox-template-detail"),
]

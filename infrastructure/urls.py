from __future__ import annotations

from django.urls import path

from infrastructure import views

app_name = "infra"

urlpatterns = [
    path("provider-accounts/", views.provider_accounts, name="provider_accounts"),
    path("provider-accounts/new/", views.provider_account_create, name="provider_account_create"),
    path("provider-accounts/<int:pk>/edit/", views.provider_account_edit, name="provider_account_edit"),
    path("provider-accounts/<int:pk>/archive/", views.provider_account_archive, name="provider_account_archive"),
    path("provider-accounts/<int:pk>/test/", views.provider_account_test, name="provider_account_test"),
    path("runtime-profiles/", views.runtime_profiles, name="runtime_profiles"),
    path("runtime-profiles/new/", views.runtime_profile_create, name="runtime_profile_create"),
    path("runtime-profiles/<int:pk>/edit/", views.runtime_profile_edit, name="runtime_profile_edit"),
    path("runtime-profiles/<int:pk>/archive/", views.runtime_profile_archive, name="runtime_profile_archive"),
    path("deployments/", views.deployments, name="deployments"),
    path("deployments/new/", views.deployment_create, name="deployment_create"),
    path("deployments/<int:pk>/edit/", views.deployment_edit, name="deployment_edit"),
    path("deployments/<int:pk>/archive/", views.deployment_archive, name="deployment_archive"),
    path("tool-resources/", views.tool_resources, name="tool_resources"),
    path("tool-resources/new/", views.tool_resource_create, name="tool_resource_create"),
    path("tool-resources/<int:pk>/edit/", views.tool_resource_edit, name="tool_resource_edit"),
    path("tool-resources/<int:pk>/archive/", views.tool_resource_archive, name="tool_resource_archive"),
    path("primitives/", views.primitives, name="primitives"),
]

from __future__ import annotations

from django.urls import path

from infrastructure.api import views

urlpatterns = [
    path("provider-accounts", views.ProviderAccountListApi.as_view(), name="api-provider-account-list"),
    path("provider-accounts/<int:pk>", views.ProviderAccountDetailApi.as_view(), name="api-provider-account-detail"),
    path("provider-accounts/<int:pk>/archive", views.ProviderAccountArchiveApi.as_view(), name="api-provider-account-archive"),
    path(
        "provider-accounts/<int:pk>/test-connection",
        views.ProviderAccountTestConnectionApi.as_view(),
        name="api-provider-account-test-connection",
    ),
    path("runtime-profiles", views.RuntimeProfileListApi.as_view(), name="api-runtime-profile-list"),
    path("runtime-profiles/<int:pk>", views.RuntimeProfileDetailApi.as_view(), name="api-runtime-profile-detail"),
    path("runtime-profiles/<int:pk>/archive", views.RuntimeProfileArchiveApi.as_view(), name="api-runtime-profile-archive"),
    path("deployments", views.DeploymentListApi.as_view(), name="api-deployment-list"),
    path("deployments/<int:pk>", views.DeploymentDetailApi.as_view(), name="api-deployment-detail"),
    path("deployments/<int:pk>/archive", views.DeploymentArchiveApi.as_view(), name="api-deployment-archive"),
    path("tool-resources", views.ToolResourceListApi.as_view(), name="api-tool-resource-list"),
    path("tool-resources/<int:pk>", views.ToolResourceDetailApi.as_view(), name="api-tool-resource-detail"),
    path("tool-resources/<int:pk>/archive", views.ToolResourceArchiveApi.as_view(), name="api-tool-resource-archive"),
]

from __future__ import annotations

from django.urls import path

from workspaces.api import views

urlpatterns = [
    path("me", views.MeApi.as_view(), name="api-me"),
    path("workspaces", views.WorkspaceListApi.as_view(), name="api-workspace-list"),
    path("workspaces/<slug:workspace_slug>", views.WorkspaceDetailApi.as_view(), name="api-workspace-detail"),
    path("workspaces/<slug:workspace_slug>/members", views.MemberListApi.as_view(), name="api-member-list"),
    path("workspaces/<slug:workspace_slug>/members/me", views.MemberLeaveApi.as_view(), name="api-member-leave"),
    path("workspaces/<slug:workspace_slug>/members/<int:pk>", views.MemberDetailApi.as_view(), name="api-member-detail"),
]

from __future__ import annotations

from django.urls import path

from workspaces.api import views

urlpatterns = [
    path("me", views.MeApi.as_view(), name="api-me"),
    path("tokens", views.TokenListApi.as_view(), name="api-token-list"),
    path("tokens/<int:pk>", views.TokenDetailApi.as_view(), name="api-token-detail"),
    path("invitations/accept", views.InvitationAcceptApi.as_view(), name="api-invitation-accept"),
    path("workspaces", views.WorkspaceListApi.as_view(), name="api-workspace-list"),
    path("workspaces/<slug:workspace_slug>", views.WorkspaceDetailApi.as_view(), name="api-workspace-detail"),
    path("workspaces/<slug:workspace_slug>/members", views.MemberListApi.as_view(), name="api-member-list"),
    path("workspaces/<slug:workspace_slug>/members/me", views.MemberLeaveApi.as_view(), name="api-member-leave"),
    path("workspaces/<slug:workspace_slug>/members/<int:pk>", views.MemberDetailApi.as_view(), name="api-member-detail"),
    path("workspaces/<slug:workspace_slug>/invitations", views.InvitationListApi.as_view(), name="api-invitation-list"),
    path("workspaces/<slug:workspace_slug>/invitations/<int:pk>", views.InvitationDetailApi.as_view(), name="api-invitation-detail"),
]

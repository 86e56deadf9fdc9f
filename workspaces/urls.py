from __future__ import annotations

from django.urls import path

from workspaces import views

app_name = "workspaces"

urlpatterns = [
    path("workspaces/new/", views.workspace_create, name="create"),
    path("settings/api-tokens/", views.api_tokens, name="api_tokens"),
    path("settings/api-tokens/<int:pk>/revoke/", views.api_token_revoke, name="api_token_revoke"),
    path("invitations/accept/", views.invitation_accept, name="invitation_accept"),
    path("w/<slug:workspace_slug>/", views.dashboard, name="dashboard"),
    path("w/<slug:workspace_slug>/members/", views.members, name="members"),
    path("w/<slug:workspace_slug>/members/add/", views.member_add, name="member_add"),
    path("w/<slug:workspace_slug>/members/invite/", views.member_invite, name="member_invite"),
    path("w/<slug:workspace_slug>/members/leave/", views.member_leave, name="member_leave"),
    path("w/<slug:workspace_slug>/members/<int:pk>/role/", views.member_update, name="member_update"),
    path("w/<slug:workspace_slug>/members/<int:pk>/remove/", views.member_remove, name="member_remove"),
]

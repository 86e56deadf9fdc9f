"""Reads for tenancy."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet

from workspaces.models import ApiToken, Invitation, WorkspaceMembership


def memberships_for_user(*, user: Any) -> QuerySet[WorkspaceMembership]:
    return WorkspaceMembership.objects.filter(user=user).select_related("workspace").order_by("workspace__name")


def members_of(*, workspace: Any) -> QuerySet[WorkspaceMembership]:
    return WorkspaceMembership.objects.filter(workspace=workspace).select_related("user").order_by("user__username")


def api_tokens_for_user(*, user: Any) -> QuerySet[ApiToken]:
    return ApiToken.objects.filter(user=user).select_related("workspace").order_by("-created_at")


def invitations_of(*, workspace: Any) -> QuerySet[Invitation]:
    return Invitation.objects.filter(workspace=workspace).select_related("invited_by", "accepted_by")

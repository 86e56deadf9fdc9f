"""Reads for secrets and the workspace audit log. None of these ever return a value."""

from __future__ import annotations

from django.db.models import QuerySet

from secrets_app.models import WorkspaceSecret
from workspaces.models import AuditEvent, Workspace


def secret_list(*, workspace: Workspace) -> QuerySet[WorkspaceSecret]:
    # .defer keeps ciphertext out of list queries: lists never need it.
    return (
        WorkspaceSecret.objects.filter(workspace=workspace).select_related("created_by", "updated_by").defer("ciphertext").order_by("key")
    )


def secret_get(*, workspace: Workspace, key: str) -> WorkspaceSecret | None:
    """One secret's metadata (no ciphertext), or None."""
    return WorkspaceSecret.objects.filter(workspace=workspace, key=key).defer("ciphertext").first()


def secret_allowed_hosts(*, workspace: Workspace) -> dict[str, list[str]]:
    """``{KEY: allowed host patterns}`` of every secret (no values): what the engine checks tools against."""
    rows = WorkspaceSecret.objects.filter(workspace=workspace).order_by("key").values_list("key", "allowed_hosts")
    return {key: list(hosts or []) for key, hosts in rows}


def secrets_exist(*, workspace: Workspace) -> bool:
    """Whether the workspace has any secret (recorded on a run at creation, docs/secrets.md)."""
    return WorkspaceSecret.objects.filter(workspace=workspace).exists()


def secret_keys(*, workspace: Workspace) -> list[str]:
    return list(WorkspaceSecret.objects.filter(workspace=workspace).order_by("key").values_list("key", flat=True))


def audit_event_list(*, workspace: Workspace, action_prefix: str = "") -> QuerySet[AuditEvent]:
    events = AuditEvent.objects.filter(workspace=workspace).select_related("actor").order_by("-created_at", "-id")
    if action_prefix:
        events = events.filter(action__startswith=action_prefix)
    return events

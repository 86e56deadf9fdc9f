"""Writes for tenancy: workspaces, memberships, API tokens, audit."""

from __future__ import annotations

import secrets
from datetime import datetime
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils import timezone

from core.actors import actor_or_none
from core.errors import DomainError, full_clean
from core.writes import insert_or_conflict
from workspaces.models import ApiToken, AuditEvent, Role, Workspace, WorkspaceMembership

User = get_user_model()


def audit_record(*, workspace: Workspace, actor: Any, action: str, target: str, metadata: dict | None = None) -> AuditEvent:
    return AuditEvent.objects.create(
        workspace=workspace,
        actor=actor_or_none(actor),
        action=action,
        target=target,
        metadata=metadata or {},
    )


@transaction.atomic
def workspace_create(*, name: str, slug: str, admin: Any, actor: Any = None) -> Workspace:
    """A new workspace with ``admin`` as its first admin; ``actor`` (default: that admin) did it."""
    workspace = Workspace(name=name.strip(), slug=slug.strip().lower())
    full_clean(workspace)
    workspace.save()
    WorkspaceMembership.objects.create(workspace=workspace, user=admin, role=Role.ADMIN)
    audit_record(workspace=workspace, actor=admin if actor is None else actor, action="workspace.created", target=workspace.slug)
    return workspace


@transaction.atomic
def workspace_rename(*, workspace: Workspace, name: str, actor: Any = None) -> Workspace:
    """A new display name; the slug (its URLs) never changes."""
    workspace = Workspace.objects.select_for_update().get(pk=workspace.pk)
    old, workspace.name = workspace.name, name.strip()
    if workspace.name == old:
        return workspace
    full_clean(workspace)
    workspace.save(update_fields=["name", "updated_at"])
    audit_record(
        workspace=workspace, actor=actor, action="workspace.renamed", target=workspace.slug, metadata={"from": old, "to": workspace.name}
    )
    return workspace


def _admin_count(workspace: Workspace) -> int:
    """Admins of the workspace, their rows locked so two admins leaving at once cannot both go."""
    return len(WorkspaceMembership.objects.select_for_update().filter(workspace=workspace, role=Role.ADMIN).values_list("pk", flat=True))


@transaction.atomic
def membership_add(*, workspace: Workspace, user: Any, role: str, actor: Any = None) -> WorkspaceMembership:
    if role not in Role.values:
        raise DomainError(f"Role must be one of {', '.join(Role.values)}.", field="role")
    if WorkspaceMembership.objects.filter(workspace=workspace, user=user).exists():
        raise DomainError(f"{user.username} is already a member of this workspace.", field="user")
    membership = WorkspaceMembership(workspace=workspace, user=user, role=role)
    insert_or_conflict(membership, field="user", message=f"{user.username} is already a member of this workspace.")
    audit_record(workspace=workspace, actor=actor, action="member.added", target=user.username, metadata={"role": role})
    return membership


def member_added_message(*, username: str, role: str) -> str:
    """The same answer whether or not the user exists (docs/operations.md, "Members")."""
    return f"If a user named “{username}” exists, they are now a {role} of this workspace."


@transaction.atomic
def membership_add_by_username(*, workspace: Workspace, username: str, role: str, actor: Any = None) -> WorkspaceMembership | None:
    """Add the user named ``username``, if there is one; None when there is not.

    Callers answer the same either way ("if that user exists, they were added"), so a workspace
    admin cannot learn which user names exist on the platform, let alone their emails.
    """
    if role not in Role.values:
        raise DomainError(f"Role must be one of {', '.join(Role.values)}.", field="role")
    username = username.strip()
    if not username:
        raise DomainError("Enter a username.", field="username")
    user = User.objects.filter(username=username, is_active=True).first()
    if user is None:
        return None
    if WorkspaceMembership.objects.filter(workspace=workspace, user=user).exists():
        # Admins see the member list, so saying so reveals nothing new.
        raise DomainError(f"{user.username} is already a member of this workspace.", field="username")
    return membership_add(workspace=workspace, user=user, role=role, actor=actor)


@transaction.atomic
def membership_update(*, membership: WorkspaceMembership, role: str, actor: Any = None) -> WorkspaceMembership:
    if role not in Role.values:
        raise DomainError(f"Role must be one of {', '.join(Role.values)}.", field="role")
    locked = WorkspaceMembership.objects.select_for_update().get(pk=membership.pk)
    if locked.role == Role.ADMIN and role != Role.ADMIN and _admin_count(locked.workspace) <= 1:
        raise DomainError("A workspace needs at least one admin. Make someone else admin first.", field="role")
    old = locked.role
    locked.role = role
    locked.save(update_fields=["role"])
    audit_record(
        workspace=locked.workspace,
        actor=actor,
        action="member.role_changed",
        target=locked.user.username,
        metadata={"from": old, "to": role},
    )
    return locked


@transaction.atomic
def membership_remove(*, membership: WorkspaceMembership, actor: Any = None) -> None:
    locked = WorkspaceMembership.objects.select_for_update().get(pk=membership.pk)
    if locked.role == Role.ADMIN and _admin_count(locked.workspace) <= 1:
        raise DomainError("You cannot remove the last admin of a workspace.", field="user")
    audit_record(workspace=locked.workspace, actor=actor, action="member.removed", target=locked.user.username)
    locked.delete()


@transaction.atomic
def membership_leave(*, workspace: Workspace, user: Any) -> None:
    """The user leaves the workspace, unless they are its last admin."""
    locked = WorkspaceMembership.objects.select_for_update().filter(workspace=workspace, user=user).first()
    if locked is None:
        raise DomainError("You are not a member of this workspace.", field="user")
    if locked.role == Role.ADMIN and _admin_count(workspace) <= 1:
        raise DomainError("You are the last admin of this workspace. Make someone else admin before you leave.", field="user")
    audit_record(workspace=workspace, actor=user, action="member.left", target=user.username)
    locked.delete()


def user_get_or_create(*, username: str, email: str = "") -> tuple[Any, str | None]:
    """The user, and a generated password if the user was created."""
    username = username.strip()
    if not username:
        raise DomainError("Enter a username.", field="username")
    user = User.objects.filter(username=username).first()
    if user is not None:
        return user, None
    password = secrets.token_urlsafe(12)
    user = User(username=username, email=email.strip())
    full_clean(user, exclude=["password"])
    user.set_password(password)
    user.save()
    return user, password


def api_token_create(*, user: Any, name: str, expires_at: datetime | None = None) -> tuple[ApiToken, str]:
    """Create a token and return it with its raw value, which is never stored and shown once."""
    name = (name or "").strip() or "API token"
    if len(name) > 100:
        raise DomainError("Name must be at most 100 characters.", field="name")
    if expires_at is not None and expires_at <= timezone.now():
        raise DomainError("Expiry must be in the future.", field="expires_at")
    raw = settings.API_TOKEN_PREFIX + secrets.token_urlsafe(32)
    token = ApiToken.objects.create(user=user, name=name, token_hash=ApiToken.hash(raw), prefix=raw[:10], expires_at=expires_at)
    return token, raw


def api_token_revoke(*, token: ApiToken) -> ApiToken:
    if token.revoked_at is None:
        token.revoked_at = timezone.now()
        token.save(update_fields=["revoked_at"])
    return token

"""Writes for tenancy: workspaces, memberships, API tokens, audit."""

from __future__ import annotations

import secrets
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils import timezone

from core.actors import actor_or_none
from core.errors import Conflict, DomainError, Forbidden, NotFound, full_clean
from core.writes import insert_or_conflict
from workspaces.models import SCOPE_RANK, ApiToken, AuditEvent, Invitation, Role, TokenScope, Workspace, WorkspaceMembership

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


def api_token_create(
    *,
    user: Any,
    name: str,
    expires_at: datetime | None = None,
    workspace: Workspace | None = None,
    scope: str = TokenScope.ADMIN,
    creator: ApiToken | None = None,
) -> tuple[ApiToken, str]:
    """Create a token and return it with its raw value, which is never stored and shown once.

    ``workspace``: limit it to that workspace (the user must be a member); ``scope``: read, run or
    admin (docs/operations.md "API tokens"). ``creator``: the token that asks (an API call), whose
    own limits the new one cannot exceed; None for a signed-in user."""
    name = (name or "").strip() or "API token"
    if len(name) > 100:
        raise DomainError("Name must be at most 100 characters.", field="name")
    if expires_at is not None and expires_at <= timezone.now():
        raise DomainError("Expiry must be in the future.", field="expires_at")
    if scope not in TokenScope.values:
        raise DomainError(f"Scope must be one of {', '.join(TokenScope.values)}.", field="scope")
    if workspace is not None and not WorkspaceMembership.objects.filter(workspace=workspace, user=user).exists():
        raise DomainError("You are not a member of that workspace: a token can only be limited to one of yours.", field="workspace")
    if creator is not None:
        if SCOPE_RANK[TokenScope(scope)] > SCOPE_RANK[TokenScope(creator.scope)]:
            raise Forbidden(f"This token's scope is {creator.scope}: it cannot make a token with a wider one ({scope}).", field="scope")
        if creator.workspace_id is not None and (workspace is None or workspace.pk != creator.workspace_id):
            raise Forbidden("This token is limited to one workspace: a token it makes must be limited to the same one.", field="workspace")
    raw = settings.API_TOKEN_PREFIX + secrets.token_urlsafe(32)
    token = ApiToken.objects.create(
        user=user, name=name, token_hash=ApiToken.hash(raw), prefix=raw[:10], expires_at=expires_at, workspace=workspace, scope=scope
    )
    return token, raw


def api_token_revoke(*, token: ApiToken) -> ApiToken:
    if token.revoked_at is None:
        token.revoked_at = timezone.now()
        token.save(update_fields=["revoked_at"])
    return token


# -- invitations -----------------------------------------------------------------------------

INVITATION_DAYS = 7
INVITATION_PREFIX = "aci_"


@transaction.atomic
def invitation_create(*, workspace: Workspace, email: str, role: str, actor: Any, days: int = INVITATION_DAYS) -> tuple[Invitation, str]:
    """Invite ``email`` to the workspace with ``role``; returns the invitation and its token, shown
    once (only its hash is kept). The invited user accepts it signed in with that email."""
    email = (email or "").strip().lower()
    if role not in Role.values:
        raise DomainError(f"Role must be one of {', '.join(Role.values)}.", field="role")
    if not 1 <= days <= 30:
        raise DomainError("An invitation lasts 1 to 30 days.", field="days")
    if WorkspaceMembership.objects.filter(workspace=workspace, user__email__iexact=email).exists():
        raise Conflict(f"{email} is already a member of this workspace.", field="email", code="already_member")
    raw = INVITATION_PREFIX + secrets.token_urlsafe(32)
    invitation = Invitation(
        workspace=workspace,
        email=email,
        role=role,
        token_hash=ApiToken.hash(raw),
        invited_by=actor_or_none(actor),
        expires_at=timezone.now() + timedelta(days=days),
    )
    full_clean(invitation, exclude=["token_hash"])
    invitation.save()
    audit_record(workspace=workspace, actor=actor, action="member.invited", target=email, metadata={"role": role})
    return invitation, raw


def invitation_revoke(*, invitation: Invitation, actor: Any) -> Invitation:
    if Invitation.objects.filter(pk=invitation.pk, accepted_at__isnull=True, revoked_at__isnull=True).update(revoked_at=timezone.now()):
        audit_record(workspace=invitation.workspace, actor=actor, action="invitation.revoked", target=invitation.email)
    invitation.refresh_from_db()
    return invitation


def invitation_find(*, token: str) -> Invitation:
    """The invitation of ``token`` (any state), or a 404 that says nothing more."""
    invitation = Invitation.objects.select_related("workspace").filter(token_hash=ApiToken.hash((token or "").strip())).first()
    if invitation is None:
        raise NotFound("No invitation has this token: check the link you were sent.", field="token", code="invitation_not_found")
    return invitation


@transaction.atomic
def invitation_accept(*, token: str, user: Any) -> WorkspaceMembership:
    """Join the invitation's workspace as ``user``, who must be signed in with the invited email.
    Single use: of two accepts at once, one wins (a compare-and-set on ``accepted_at``)."""
    invitation = invitation_find(token=token)
    if invitation.status != "pending":
        raise Conflict(f"This invitation is {invitation.status}: ask an admin of the workspace for a new one.", field="token",
                       code=f"invitation_{invitation.status}")  # fmt: skip
    if not user.email or user.email.strip().lower() != invitation.email:
        raise Forbidden(
            "This invitation is for another email address: sign in as the user it was sent to (or set your email to it).",
            field="token",
            code="invitation_email_mismatch",
        )
    if WorkspaceMembership.objects.filter(workspace=invitation.workspace, user=user).exists():
        raise Conflict("You are already a member of this workspace.", field="token", code="already_member")
    now = timezone.now()
    claimed = Invitation.objects.filter(pk=invitation.pk, accepted_at__isnull=True, revoked_at__isnull=True, expires_at__gt=now).update(
        accepted_at=now, accepted_by=user
    )
    if not claimed:
        raise Conflict(
            "This invitation was just used: ask an admin of the workspace for a new one.", field="token", code="invitation_accepted"
        )
    membership = WorkspaceMembership.objects.create(workspace=invitation.workspace, user=user, role=invitation.role)
    audit_record(
        workspace=invitation.workspace, actor=user, action="member.joined", target=user.username, metadata={"role": invitation.role}
    )
    return membership

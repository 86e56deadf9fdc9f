"""Tenancy: workspaces, memberships and roles, API tokens, the audit trail."""

from __future__ import annotations

import hashlib

from django.conf import settings
from django.db import models
from django.utils import timezone


class Role(models.TextChoices):
    ADMIN = "admin", "Admin"
    MEMBER = "member", "Member"
    VIEWER = "viewer", "Viewer"


ROLE_RANK = {Role.VIEWER: 0, Role.MEMBER: 1, Role.ADMIN: 2}


class Workspace(models.Model):
    name = models.CharField(max_length=200)
    slug = models.SlugField(max_length=64, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class WorkspaceMembership(models.Model):
    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="workspace_memberships")
    role = models.CharField(max_length=16, choices=Role.choices, default=Role.MEMBER)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["workspace", "user"], name="uniq_membership_workspace_user"),
            models.CheckConstraint(condition=models.Q(role__in=Role.values), name="membership_role_valid"),
        ]
        ordering = ["workspace__name", "user__username"]

    def __str__(self) -> str:
        return f"{self.user} in {self.workspace} ({self.role})"

    def has_role(self, minimum: str) -> bool:
        return ROLE_RANK[Role(self.role)] >= ROLE_RANK[Role(minimum)]


class TokenScope(models.TextChoices):
    """What an API token may do, on top of its user's role (docs/operations.md "API tokens"):
    ``read`` reads only; ``run`` also starts runs and evaluates gates; ``admin`` does whatever the
    user's role allows (every token made before scopes existed)."""

    READ = "read", "Read"
    RUN = "run", "Read and run (start runs, gate)"
    ADMIN = "admin", "Full (whatever your role allows)"


SCOPE_RANK = {TokenScope.READ: 0, TokenScope.RUN: 1, TokenScope.ADMIN: 2}


class ApiToken(models.Model):
    """A personal API token. Only the SHA-256 of the token is stored; it is shown once.

    ``workspace``: the one workspace it works in (None: every workspace of its user); ``scope``:
    what it may do there (:class:`TokenScope`)."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens")
    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, null=True, blank=True, related_name="+")
    scope = models.CharField(max_length=8, choices=TokenScope.choices, default=TokenScope.ADMIN)
    name = models.CharField(max_length=100)
    token_hash = models.CharField(max_length=64, unique=True, editable=False)
    prefix = models.CharField(max_length=16, editable=False, help_text="First characters, to recognise the token.")
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True, editable=False)
    expires_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"

    @staticmethod
    def hash(raw: str) -> str:
        return hashlib.sha256(raw.encode()).hexdigest()

    @property
    def is_active(self) -> bool:
        if self.revoked_at is not None:
            return False
        return self.expires_at is None or self.expires_at > timezone.now()


class Invitation(models.Model):
    """An invitation to join a workspace: single-use, expiring; only the SHA-256 of its token is
    stored (the token is shown once, to the admin who made it). Accepted by a signed-in user whose
    email is ``email``."""

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="invitations")
    email = models.EmailField()
    role = models.CharField(max_length=16, choices=Role.choices, default=Role.MEMBER)
    token_hash = models.CharField(max_length=64, unique=True, editable=False)
    invited_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    accepted_at = models.DateTimeField(null=True, blank=True)
    accepted_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [models.CheckConstraint(condition=models.Q(role__in=Role.values), name="invitation_role_valid")]

    def __str__(self) -> str:
        return f"{self.email} to {self.workspace} ({self.role})"

    @property
    def status(self) -> str:
        if self.accepted_at is not None:
            return "accepted"
        if self.revoked_at is not None:
            return "revoked"
        return "expired" if self.expires_at <= timezone.now() else "pending"


class AuditEvent(models.Model):
    """Who changed what. Metadata never holds secret values."""

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="audit_events")
    actor = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    action = models.CharField(max_length=64)
    target = models.CharField(max_length=200)
    metadata = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(default=timezone.now, db_index=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.action} {self.target}"


class IdempotentRequest(models.Model):
    """A write sent with an ``Idempotency-Key`` header, and its answer, kept for a day.

    The same key with the same body replays ``response_body``/``response_status``; with another
    body it is refused (409). ``response_status`` is null while the first request is running.
    """

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="+")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    key = models.CharField(max_length=255)
    request_hash = models.CharField(max_length=64, help_text="SHA-256 of the method, path and body.")
    response_status = models.PositiveSmallIntegerField(null=True, blank=True)
    response_body = models.JSONField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["workspace", "user", "key"], name="uniq_idempotency_key")]

    def __str__(self) -> str:
        return f"{self.key} ({self.response_status or 'running'})"

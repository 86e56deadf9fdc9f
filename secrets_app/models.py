"""Workspace secrets, encrypted at rest. The value never comes back out."""

from __future__ import annotations

from django.conf import settings
from django.core.validators import RegexValidator
from django.db import models

SECRET_KEY_RE = r"^[A-Za-z_][A-Za-z0-9_]*$"
SECRET_VALUE_MAX_BYTES = 64 * 1024


class WorkspaceSecret(models.Model):
    workspace = models.ForeignKey("workspaces.Workspace", on_delete=models.CASCADE, related_name="secrets")
    key = models.CharField(
        max_length=128,
        validators=[RegexValidator(SECRET_KEY_RE, "Use letters, digits and underscores, not starting with a digit.")],
    )
    # "<key id>" + nonce + AES-GCM ciphertext; see secrets_app/crypto.py. Never rendered anywhere.
    ciphertext = models.BinaryField(editable=False)
    key_id = models.CharField(max_length=32, editable=False)
    # Where tools may send the value (engine.tools.secret_hosts patterns, canonical form); empty =
    # nowhere: ``${secrets.KEY}`` in a composed tool fails until an admin sets some. Not secret.
    allowed_hosts = models.JSONField(default=list, blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    updated_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["key"]
        constraints = [models.UniqueConstraint(fields=["workspace", "key"], name="uniq_workspace_secret_key")]

    def __str__(self) -> str:
        return self.key

    def __repr__(self) -> str:
        return f"<WorkspaceSecret {self.key!r} workspace={self.workspace_id}>"

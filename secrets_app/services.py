"""Writes for workspace secrets. Values go in, never out (except to the run worker, in memory)."""

from __future__ import annotations

import logging
import re
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction

from core.actors import actor_or_none
from secrets_app import crypto
from secrets_app.models import SECRET_KEY_RE, SECRET_VALUE_MAX_BYTES, WorkspaceSecret
from workspaces.models import Workspace
from workspaces.services import audit_record

logger = logging.getLogger(__name__)

SECRET_KEY_MAX_LENGTH = 128
_KEY = re.compile(SECRET_KEY_RE)


def secret_key_errors(key: str) -> list[str]:
    if not key:
        return ["Enter a key, for example OPENAI_API_KEY."]
    if len(key) > SECRET_KEY_MAX_LENGTH:
        return [f"Keys are at most {SECRET_KEY_MAX_LENGTH} characters (this one has {len(key)})."]
    if not _KEY.fullmatch(key):
        return ["Use letters, digits and underscores, not starting with a digit (for example OPENAI_API_KEY)."]
    return []


def secret_value_errors(value: object) -> list[str]:
    # Messages describe the value's size only; the value itself never appears in an error.
    if not isinstance(value, str):
        return ["The value must be a string."]
    size = len(value.encode("utf-8"))
    if size == 0:
        return ["Enter a value (at least 1 byte)."]
    if size > SECRET_VALUE_MAX_BYTES:
        return [f"The value is {size} bytes; the limit is {SECRET_VALUE_MAX_BYTES} bytes (64 KiB)."]
    return []


@transaction.atomic
def secret_set(*, workspace: Workspace, key: str, value: str, actor: Any = None) -> tuple[WorkspaceSecret, bool]:
    """Create or replace a secret. Returns (secret, created)."""
    errors: dict[str, list[str]] = {}
    if key_errors := secret_key_errors(key):
        errors["key"] = key_errors
    if value_errors := secret_value_errors(value):
        errors["value"] = value_errors
    if errors:
        raise ValidationError(errors)
    actor_user = actor_or_none(actor)
    ciphertext, key_id = crypto.encrypt(workspace_id=workspace.pk, secret_key=key, plaintext=value)
    secret = WorkspaceSecret.objects.select_for_update().filter(workspace=workspace, key=key).first()
    created = secret is None
    if created:
        secret = WorkspaceSecret(
            workspace=workspace, key=key, ciphertext=ciphertext, key_id=key_id, created_by=actor_user, updated_by=actor_user
        )
        secret.full_clean()
        secret.save()
    else:
        secret.ciphertext, secret.key_id, secret.updated_by = ciphertext, key_id, actor_user
        secret.save(update_fields=["ciphertext", "key_id", "updated_by", "updated_at"])
    audit_record(workspace=workspace, actor=actor, action="secret.created" if created else "secret.updated", target=key)
    logger.info("secret %s %s in workspace %s", key, "created" if created else "replaced", workspace.slug)
    return secret, created


@transaction.atomic
def secret_delete(*, secret: WorkspaceSecret, actor: Any = None) -> None:
    audit_record(workspace=secret.workspace, actor=actor, action="secret.deleted", target=secret.key)
    logger.info("secret %s deleted in workspace %s", secret.key, secret.workspace.slug)
    secret.delete()


def secret_value(*, secret: WorkspaceSecret) -> str:
    """Decrypt one secret, in memory. Only for the engine, provider calls and rotation."""
    return crypto.decrypt(workspace_id=secret.workspace_id, secret_key=secret.key, ciphertext=bytes(secret.ciphertext))


def secret_resolve(*, workspace: Workspace, key: str) -> str | None:
    """The decrypted value of one secret, or None when the workspace has no such key."""
    secret = WorkspaceSecret.objects.filter(workspace=workspace, key=key).first()
    return None if secret is None else secret_value(secret=secret)


def secrets_resolve_for_run(*, workspace: Workspace) -> dict[str, str]:
    """Every secret of the workspace, decrypted: ``{KEY: value}``. Keep it in memory only."""
    return {secret.key: secret_value(secret=secret) for secret in WorkspaceSecret.objects.filter(workspace=workspace).order_by("key")}


def secrets_reencrypt_all(*, batch_size: int = 200) -> tuple[int, int]:
    """Re-encrypt every secret not yet under the newest key. Returns (re-encrypted, total).

    Each row is locked, decrypted with whichever configured key it names, and written back
    under the newest key in its own transaction, so a crash mid-way leaves every row readable.
    """
    ring = crypto.keyring()
    total = WorkspaceSecret.objects.count()
    done = 0
    pks = list(WorkspaceSecret.objects.exclude(key_id=ring.current_id).values_list("pk", flat=True))
    for start in range(0, len(pks), batch_size):
        for pk in pks[start : start + batch_size]:
            with transaction.atomic():
                secret = WorkspaceSecret.objects.select_for_update().filter(pk=pk).first()
                if secret is None or secret.key_id == ring.current_id:
                    continue
                plain = crypto.decrypt(
                    workspace_id=secret.workspace_id, secret_key=secret.key, ciphertext=bytes(secret.ciphertext), ring=ring
                )
                secret.ciphertext, secret.key_id = crypto.encrypt(
                    workspace_id=secret.workspace_id, secret_key=secret.key, plaintext=plain, ring=ring
                )
                # updated_at is left alone on purpose: rotation is not a change of the value.
                WorkspaceSecret.objects.filter(pk=pk).update(ciphertext=secret.ciphertext, key_id=secret.key_id)
                done += 1
    return done, total

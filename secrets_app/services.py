"""Writes for workspace secrets. Values go in, never out (except to the run worker, in memory)."""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from typing import Any

from django.db import transaction

from core.actors import actor_or_none
from core.errors import Conflict, DomainError, full_clean
from core.writes import insert_or_none
from engine.tools import secret_hosts
from secrets_app import crypto
from secrets_app.models import SECRET_KEY_RE, SECRET_VALUE_MAX_BYTES, WorkspaceSecret
from workspaces.models import Workspace
from workspaces.services import audit_record

logger = logging.getLogger(__name__)

SECRET_KEY_MAX_LENGTH = 128
_KEY = re.compile(SECRET_KEY_RE)
CREDENTIAL_SCHEME = "workspace-secret://"
_CREDENTIAL_REFERENCE = re.compile(rf"{re.escape(CREDENTIAL_SCHEME)}([A-Za-z_][A-Za-z0-9_]{{0,{SECRET_KEY_MAX_LENGTH - 1}}})")


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


def secret_allowed_hosts_errors(hosts: object) -> list[str]:
    """What is wrong with these allowed-host patterns (``engine.tools.secret_hosts``), one message
    per bad entry in the order given; empty when they are fine."""
    if isinstance(hosts, str) or not isinstance(hosts, (list, tuple)):
        return ['Send a list of hosts, for example ["api.example.com", "*.example.org:443"].']
    messages: list[str] = []
    for item in hosts:
        if not isinstance(item, str):
            messages.append("Each host must be a string.")
            continue
        try:
            secret_hosts.parse(item)
        except secret_hosts.HostPatternError as exc:
            messages.append(str(exc))
    return messages


def secret_allowed_hosts_normalise(hosts: object) -> list[str]:
    """The canonical allowed-host patterns; a :class:`DomainError` on ``allowed_hosts`` names every bad entry."""
    if errors := secret_allowed_hosts_errors(hosts):
        raise DomainError(" ".join(errors), field="allowed_hosts")
    assert isinstance(hosts, (list, tuple))
    try:
        return secret_hosts.normalise(list(hosts))
    except secret_hosts.HostPatternError as exc:  # too many
        raise DomainError(str(exc), field="allowed_hosts") from None


@transaction.atomic
def secret_set(
    *, workspace: Workspace, key: str, value: str | None = None, allowed_hosts: list[str] | None = None, actor: Any = None
) -> tuple[WorkspaceSecret, bool]:
    """Create or replace a secret, or change only where tools may send it. Returns (secret, created).

    ``value`` None keeps the stored value (a new secret needs one); ``allowed_hosts`` None keeps
    the stored hosts (none for a new secret), a list replaces them (``[]`` clears them).
    """
    if key_errors := secret_key_errors(key):
        raise DomainError(" ".join(key_errors), field="key")
    if value is not None and (value_errors := secret_value_errors(value)):
        raise DomainError(" ".join(value_errors), field="value")
    hosts = None if allowed_hosts is None else secret_allowed_hosts_normalise(allowed_hosts)
    actor_user = actor_or_none(actor)
    secret = WorkspaceSecret.objects.select_for_update().filter(workspace=workspace, key=key).first()
    created = secret is None
    if value is None and (created or hosts is None):
        raise DomainError("Enter a value (at least 1 byte)." if created else "Send a new value, allowed hosts or both.", field="value")
    if created:
        ciphertext, key_id = crypto.encrypt(workspace_id=workspace.pk, secret_key=key, plaintext=value or "")
        secret = WorkspaceSecret(
            workspace=workspace, key=key, ciphertext=ciphertext, key_id=key_id, allowed_hosts=hosts or [],
            created_by=actor_user, updated_by=actor_user,
        )  # fmt: skip
        try:
            full_clean(secret)
            inserted = insert_or_none(secret)
        except Conflict:  # the twin was committed before the constraint check ran
            inserted = None
        if inserted is not None:
            audit_record(
                workspace=workspace, actor=actor, action="secret.created", target=key, metadata={"allowed_hosts": secret.allowed_hosts}
            )
            logger.info("secret %s created in workspace %s", key, workspace.slug)
            return secret, created
        # A concurrent PUT of the same key inserted first: this one replaces it, like a PUT after it.
        secret, created = WorkspaceSecret.objects.select_for_update().get(workspace=workspace, key=key), False
    assert secret is not None
    fields = ["updated_by", "updated_at"]
    metadata: dict[str, Any] = {"value": "kept" if value is None else "replaced"}
    if value is not None:
        secret.ciphertext, secret.key_id = crypto.encrypt(workspace_id=workspace.pk, secret_key=key, plaintext=value)
        fields += ["ciphertext", "key_id"]
    if hosts is not None and hosts != list(secret.allowed_hosts or []):
        metadata["allowed_hosts"] = {"from": list(secret.allowed_hosts or []), "to": hosts}
        secret.allowed_hosts = hosts
        fields.append("allowed_hosts")
    secret.updated_by = actor_user
    secret.save(update_fields=fields)
    audit_record(workspace=workspace, actor=actor, action="secret.updated", target=key, metadata=metadata)
    logger.info("secret %s updated in workspace %s (value %s)", key, workspace.slug, metadata["value"])
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


class CredentialUnavailable(DomainError):
    """A provider account's credential reference names no usable secret. The message names the
    key, never a value (spec runtime.md §7.5: a non-retryable ``credential_unavailable``)."""

    default_code = "credential_unavailable"

    def __init__(self, message: str, *, key: str | None = None) -> None:
        super().__init__(message, field="credential_reference")
        self.key = key


def credential_reference(key: str) -> str:
    """The ``credential_reference`` that names the workspace secret ``key``."""
    return f"{CREDENTIAL_SCHEME}{key}"


def credential_reference_key(reference: str) -> str | None:
    """The secret key a ``workspace-secret://KEY`` reference names, or None for any other text."""
    match = _CREDENTIAL_REFERENCE.fullmatch((reference or "").strip())
    return match.group(1) if match else None


def credential_resolve(*, workspace: Workspace, reference: str, secrets: Mapping[str, str] | None = None) -> str | None:
    """The API key a provider account's ``credential_reference`` names; None when it names none.

    Only ``workspace-secret://KEY`` is honoured: the reference's ``env://`` and ``secret://`` forms
    would let anyone who can edit a provider account read the worker's environment, so they are
    refused here as they are when an account is saved (docs/secrets.md). ``secrets`` (the
    workspace's secrets, already decrypted for a run) spares reading the secret again. Raises
    :class:`CredentialUnavailable` when the reference is malformed or its secret is missing or
    empty, and ``SecretDecryptionError`` when the secret cannot be decrypted.
    """
    if not (reference or "").strip():
        return None
    key = credential_reference_key(reference)
    if key is None:
        raise CredentialUnavailable(f"unsupported credential reference: use {CREDENTIAL_SCHEME}KEY")
    value = secrets.get(key) if secrets is not None else secret_resolve(workspace=workspace, key=key)
    if not value:
        raise CredentialUnavailable(f'workspace secret "{key}" not found', key=key)
    return value


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

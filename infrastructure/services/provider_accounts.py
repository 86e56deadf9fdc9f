"""Writes for provider accounts: how deployments reach a model (credential, base URL, shared limits)."""

from __future__ import annotations

import re
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from core.actors import actor_or_none
from core.errors import DomainError, full_clean
from infrastructure import base_url as base_url_rules
from infrastructure.connection import ConnectionResult, probe_models
from infrastructure.models import ProviderAccount, ProviderKey
from infrastructure.services.owned import UNSET, apply_changes, archive, audit_write, check_unique, save_checked
from secrets_app.crypto import SecretDecryptionError
from secrets_app.models import WorkspaceSecret
from secrets_app.services import CredentialUnavailable, credential_reference, credential_reference_key, credential_resolve, secret_set
from workspaces.models import Workspace
from workspaces.services import audit_record


def _clean_base_url(provider_key: str, url: str) -> str:
    url = (url or "").strip()
    if not url and provider_key == ProviderKey.CUSTOM:
        raise DomainError("A custom provider needs the base URL of its OpenAI-compatible server (…/v1).", field="base_url")
    if not url:
        return ""
    if provider_key == ProviderKey.SCRIPTED:
        raise DomainError("Scripted accounts run offline; leave the base URL empty.", field="base_url")
    try:
        base_url_rules.base_url_check(url, allow_private=settings.ALLOW_PRIVATE_PROVIDER_URLS, resolver=base_url_rules.system_resolver)
    except base_url_rules.BaseUrlError as exc:
        raise DomainError(exc.message, field="base_url") from None
    return url.rstrip("/")


def _api_key_secret_name(*, workspace: Workspace, account_name: str, provider_key: str, current_reference: str) -> str:
    stem = re.sub(r"[^A-Za-z0-9]+", "_", f"{provider_key}_{account_name}").strip("_").upper()[:100] or "PROVIDER"
    if stem[0].isdigit():
        stem = f"_{stem}"
    base = f"{stem}_API_KEY"
    if credential_reference_key(current_reference) == base:
        return base  # this account's own generated secret: replace its value
    taken = set(WorkspaceSecret.objects.filter(workspace=workspace, key__startswith=base).values_list("key", flat=True))
    candidate, n = base, 1
    while candidate in taken:
        n += 1
        candidate = f"{base}_{n}"
    return candidate


def _store_api_key(*, account: ProviderAccount, api_key: str, actor: Any) -> str:
    key = _api_key_secret_name(
        workspace=account.workspace,
        account_name=account.name,
        provider_key=account.provider_key,
        current_reference=account.credential_reference,
    )
    try:
        secret_set(workspace=account.workspace, key=key, value=api_key, actor=actor)
    except DomainError as exc:  # the secret's value rules, said about the field the user typed it in
        raise DomainError(exc.message, field="api_key") from None
    return credential_reference(key)


def _provider_account_write(
    *, account: ProviderAccount, changes: dict[str, Any], api_key: str, actor: Any, creating: bool
) -> ProviderAccount:
    reference = changes.get("credential_reference", UNSET)
    if api_key and reference not in (UNSET, "", account.credential_reference):
        raise DomainError("Give either an API key or a credential reference, not both.", field="api_key")
    if reference is not UNSET:
        changes["credential_reference"] = reference = (reference or "").strip()
        if reference and credential_reference_key(reference) is None:
            raise DomainError("Use the form workspace-secret://KEY, where KEY is a workspace secret's key.", field="credential_reference")
    provider_key = changes.get("provider_key", account.provider_key)
    if changes.get("base_url", UNSET) is not UNSET or changes.get("provider_key", UNSET) is not UNSET:
        changes["base_url"] = _clean_base_url(provider_key, changes.get("base_url", account.base_url))
    changed = apply_changes(account, changes)
    check_unique(account, "name", "provider account")
    full_clean(account, exclude=["credential_reference"] if api_key else None)
    if api_key:
        account.credential_reference = _store_api_key(account=account, api_key=api_key, actor=actor)
        changed = [*dict.fromkeys([*changed, "credential_reference"])]
    save_checked(account, changed, creating=creating)
    audit_write(
        account, noun="provider_account", changed=changed, creating=creating, actor=actor, metadata={"provider_key": account.provider_key}
    )
    return account


@transaction.atomic
def provider_account_create(
    *,
    workspace: Workspace,
    name: str,
    provider_key: str,
    credential_reference: str = "",
    api_key: str = "",
    base_url: str = "",
    max_concurrent_calls: int | None = None,
    requests_per_minute: int | None = None,
    tokens_per_minute: int | None = None,
    actor: Any = None,
) -> ProviderAccount:
    account = ProviderAccount(workspace=workspace, created_by=actor_or_none(actor))
    changes = {
        "name": (name or "").strip(),
        "provider_key": provider_key,
        "credential_reference": credential_reference,
        "base_url": base_url,
        # Shared by every worker (runs/throttle/, docs/provider-limits.md); None = no limit.
        "max_concurrent_calls": max_concurrent_calls,
        "requests_per_minute": requests_per_minute,
        "tokens_per_minute": tokens_per_minute,
    }
    return _provider_account_write(account=account, changes=changes, api_key=api_key, actor=actor, creating=True)


@transaction.atomic
def provider_account_update(
    *,
    account: ProviderAccount,
    actor: Any = None,
    name: str = UNSET,
    provider_key: str = UNSET,
    credential_reference: str = UNSET,
    api_key: str = "",
    base_url: str = UNSET,
    status: str = UNSET,
    max_concurrent_calls: int | None = UNSET,
    requests_per_minute: int | None = UNSET,
    tokens_per_minute: int | None = UNSET,
) -> ProviderAccount:
    account = ProviderAccount.objects.select_for_update().select_related("workspace").get(pk=account.pk)
    changes = {
        "name": name.strip() if isinstance(name, str) else name,
        "provider_key": provider_key,
        "credential_reference": credential_reference,
        "base_url": base_url,
        "status": status,
        "max_concurrent_calls": max_concurrent_calls,
        "requests_per_minute": requests_per_minute,
        "tokens_per_minute": tokens_per_minute,
    }
    changes = {k: v for k, v in changes.items() if v is not UNSET}
    return _provider_account_write(account=account, changes=changes, api_key=api_key, actor=actor, creating=False)


@transaction.atomic
def provider_account_archive(*, account: ProviderAccount, actor: Any = None) -> ProviderAccount:
    return archive(account, field="status", actor=actor, action="provider_account.archived")


def provider_account_test_connection(*, account: ProviderAccount, actor: Any = None) -> ConnectionResult:
    """Call the provider's model list and record the outcome on the account (not in a transaction:
    the HTTP call must not hold a database lock)."""

    api_key: str | None = None
    result: ConnectionResult | None = None
    if account.provider_key != ProviderKey.SCRIPTED:
        try:
            api_key = credential_resolve(workspace=account.workspace, reference=account.credential_reference)
        except CredentialUnavailable as exc:
            message = (
                f"The workspace secret {exc.key} does not exist. Add it on the Secrets page."
                if exc.key
                else "The credential reference is not of the form workspace-secret://KEY; edit the account."
            )
            result = ConnectionResult(False, message)
        except SecretDecryptionError:
            key = credential_reference_key(account.credential_reference)
            result = ConnectionResult(
                False, f"The workspace secret {key} could not be decrypted; ask an operator to check the encryption keys."
            )
    if result is None:
        result = probe_models(
            provider_key=account.provider_key,
            base_url=account.base_url,
            api_key=api_key,
            allow_private=settings.ALLOW_PRIVATE_PROVIDER_URLS,
            resolver=base_url_rules.system_resolver,
        )
    fields = {
        "last_test_status": "ok" if result.ok else "error",
        "last_test_message": result.message[:500],
        "last_tested_at": timezone.now(),
    }
    if account.status in (ProviderAccount.Status.ACTIVE, ProviderAccount.Status.ERROR):
        fields["status"] = ProviderAccount.Status.ACTIVE if result.ok else ProviderAccount.Status.ERROR
    with transaction.atomic():
        ProviderAccount.objects.filter(pk=account.pk).update(**fields)
        audit_record(
            workspace=account.workspace, actor=actor, action="provider_account.tested", target=account.name, metadata={"ok": result.ok}
        )
    for name, value in fields.items():
        setattr(account, name, value)
    return result

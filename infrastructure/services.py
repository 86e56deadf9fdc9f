"""Writes for workspace infrastructure: provider accounts, runtime profiles, deployments, tool resources."""

from __future__ import annotations

import re
from typing import Any, TypeVar

from django.conf import settings
from django.core.exceptions import ObjectDoesNotExist
from django.db import models, transaction
from django.utils import timezone
from django.utils.text import slugify

from bundle import validate_composed_tool
from core.actors import actor_or_none
from core.errors import DomainError, full_clean
from engine.tools.registry import catalogue
from infrastructure import base_url as base_url_rules
from infrastructure.connection import ConnectionResult, probe_models
from infrastructure.models import (
    AgentDeployment,
    ExecutionTarget,
    LifecycleStatus,
    ProviderAccount,
    ProviderKey,
    RuntimeProfile,
    ToolResource,
)
from infrastructure.scripted_config import scripted_config_errors
from secrets_app.crypto import SecretDecryptionError
from secrets_app.models import WorkspaceSecret
from secrets_app.services import CredentialUnavailable, credential_reference, credential_reference_key, credential_resolve, secret_set
from workspaces.models import Workspace
from workspaces.services import audit_record

_UNSET: Any = object()
# The workspace-owned records the helpers below work on.
_Owned = TypeVar("_Owned", ProviderAccount, RuntimeProfile, AgentDeployment, ToolResource)


# ------------------------------------------------------------------------------ helpers
def _check_unique(obj: _Owned, field: str, label: str) -> None:
    value = getattr(obj, field)
    clash = type(obj).objects.filter(workspace=obj.workspace, **{field: value}).exclude(pk=obj.pk).exists()
    if clash:
        raise DomainError(f"This workspace already has a {label} with the {field} “{value}”.", field=field)


def _apply(obj: models.Model, changes: dict[str, Any]) -> list[str]:
    """Set the given fields (skipping _UNSET); return the names that really changed."""
    changed = []
    for name, value in changes.items():
        if value is _UNSET:
            continue
        try:
            current = getattr(obj, name)
        except ObjectDoesNotExist:  # an unset foreign key on a new object
            current = _UNSET
        if current is _UNSET or current != value:
            setattr(obj, name, value)
            changed.append(name)
    return changed


def _save(obj: models.Model, changed: list[str], *, creating: bool) -> None:
    full_clean(obj)
    if creating:
        obj.save()
    elif changed:
        obj.save(update_fields=[*changed, "updated_at"])


# ------------------------------------------------------------------------------ provider accounts
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
    reference = changes.get("credential_reference", _UNSET)
    if api_key and reference not in (_UNSET, "", account.credential_reference):
        raise DomainError("Give either an API key or a credential reference, not both.", field="api_key")
    if reference is not _UNSET:
        changes["credential_reference"] = reference = (reference or "").strip()
        if reference and credential_reference_key(reference) is None:
            raise DomainError("Use the form workspace-secret://KEY, where KEY is a workspace secret's key.", field="credential_reference")
    provider_key = changes.get("provider_key", account.provider_key)
    if changes.get("base_url", _UNSET) is not _UNSET or changes.get("provider_key", _UNSET) is not _UNSET:
        changes["base_url"] = _clean_base_url(provider_key, changes.get("base_url", account.base_url))
    changed = _apply(account, changes)
    _check_unique(account, "name", "provider account")
    full_clean(account, exclude=["credential_reference"] if api_key else None)
    if api_key:
        account.credential_reference = _store_api_key(account=account, api_key=api_key, actor=actor)
        changed = [*dict.fromkeys([*changed, "credential_reference"])]
    _save(account, changed, creating=creating)
    if creating or changed:
        audit_record(
            workspace=account.workspace,
            actor=actor,
            action="provider_account.created" if creating else "provider_account.updated",
            target=account.name,
            metadata={"provider_key": account.provider_key, "fields": sorted(changed)}
            if not creating
            else {"provider_key": account.provider_key},
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
    name: str = _UNSET,
    provider_key: str = _UNSET,
    credential_reference: str = _UNSET,
    api_key: str = "",
    base_url: str = _UNSET,
    status: str = _UNSET,
    max_concurrent_calls: int | None = _UNSET,
    requests_per_minute: int | None = _UNSET,
    tokens_per_minute: int | None = _UNSET,
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
    changes = {k: v for k, v in changes.items() if v is not _UNSET}
    return _provider_account_write(account=account, changes=changes, api_key=api_key, actor=actor, creating=False)


@transaction.atomic
def provider_account_archive(*, account: ProviderAccount, actor: Any = None) -> ProviderAccount:
    updated = (
        ProviderAccount.objects.filter(pk=account.pk)
        .exclude(status=ProviderAccount.Status.ARCHIVED)
        .update(status=ProviderAccount.Status.ARCHIVED, updated_at=timezone.now())
    )
    if updated:
        audit_record(workspace=account.workspace, actor=actor, action="provider_account.archived", target=account.name)
    account.refresh_from_db()
    return account


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


# ------------------------------------------------------------------------------ runtime profiles
RUNTIME_PROFILE_FIELDS = (
    "name", "execution_target", "max_iterations", "max_tool_calls", "step_timeout_seconds", "run_timeout_seconds",
    "max_in_flight_cases", "allow_shell", "allow_network", "max_workspace_bytes",
)  # fmt: skip


def _runtime_profile_write(*, profile: RuntimeProfile, changes: dict[str, Any], actor: Any, creating: bool) -> RuntimeProfile:
    if isinstance(changes.get("name"), str):
        changes["name"] = changes["name"].strip()
    changed = _apply(profile, changes)
    _check_unique(profile, "name", "runtime profile")
    if profile.run_timeout_seconds and profile.step_timeout_seconds and profile.step_timeout_seconds > profile.run_timeout_seconds:
        raise DomainError("The step timeout cannot be longer than the run timeout.", field="step_timeout_seconds")
    _save(profile, changed, creating=creating)
    if creating or changed:
        action = "runtime_profile.created" if creating else "runtime_profile.updated"
        audit_record(
            workspace=profile.workspace,
            actor=actor,
            action=action,
            target=profile.name,
            metadata={} if creating else {"fields": sorted(changed)},
        )
    return profile


@transaction.atomic
def runtime_profile_create(*, workspace: Workspace, name: str, actor: Any = None, **fields: Any) -> RuntimeProfile:
    unknown = set(fields) - set(RUNTIME_PROFILE_FIELDS)
    if unknown:
        raise TypeError(f"unknown runtime profile fields: {sorted(unknown)}")
    profile = RuntimeProfile(workspace=workspace)
    return _runtime_profile_write(profile=profile, changes={"name": name, **fields}, actor=actor, creating=True)


@transaction.atomic
def runtime_profile_update(*, profile: RuntimeProfile, actor: Any = None, **fields: Any) -> RuntimeProfile:
    unknown = set(fields) - set(RUNTIME_PROFILE_FIELDS)
    if unknown:
        raise TypeError(f"unknown runtime profile fields: {sorted(unknown)}")
    profile = RuntimeProfile.objects.select_for_update().select_related("workspace").get(pk=profile.pk)
    return _runtime_profile_write(profile=profile, changes=fields, actor=actor, creating=False)


def _archive(obj: _Owned, *, field: str, actor: Any, action: str) -> _Owned:
    model = type(obj)
    updated = model.objects.filter(pk=obj.pk).exclude(**{field: "archived"}).update(**{field: "archived", "updated_at": timezone.now()})
    if updated:
        audit_record(workspace=obj.workspace, actor=actor, action=action, target=obj.name)
    obj.refresh_from_db()
    return obj


@transaction.atomic
def runtime_profile_archive(*, profile: RuntimeProfile, actor: Any = None) -> RuntimeProfile:
    return _archive(profile, field="status", actor=actor, action="runtime_profile.archived")


# ------------------------------------------------------------------------------ deployments
DEPLOYMENT_FIELDS = (
    "name",
    "provider_account",
    "model",
    "runtime_profile",
    "system_prompt",
    "output_schema",
    "deployment_config",
    "is_default_judge",
    "endpoint_url",
)


def endpoint_url_error(*, execution_target: str, url: str) -> str | None:
    """Why a deployment's endpoint URL is not acceptable (None when it is): a hosted agent's
    endpoint passes the provider base-URL rules (DNS included); other deployments have none."""
    url = (url or "").strip()
    if execution_target != ExecutionTarget.HOSTED_EXTERNAL:
        return "Only deployments with a hosted external runtime profile have an endpoint URL." if url else None
    if not url:
        return "A hosted agent needs the HTTPS endpoint the worker sends each case to."
    try:
        base_url_rules.base_url_check(url, allow_private=settings.ALLOW_PRIVATE_PROVIDER_URLS, resolver=base_url_rules.system_resolver)
    except base_url_rules.BaseUrlError as exc:
        return exc.message
    return None


def _clean_endpoint_url(deployment: AgentDeployment) -> None:
    deployment.endpoint_url = (deployment.endpoint_url or "").strip()
    error = endpoint_url_error(execution_target=deployment.runtime_profile.execution_target, url=deployment.endpoint_url)
    if error:
        raise DomainError(error, field="endpoint_url")


def _deployment_write(*, deployment: AgentDeployment, changes: dict[str, Any], actor: Any, creating: bool) -> AgentDeployment:
    for field in ("name", "model"):
        if isinstance(changes.get(field), str):
            changes[field] = changes[field].strip()
    if changes.get("deployment_config", _UNSET) is None:
        changes["deployment_config"] = {}
    account = changes.get("provider_account", _UNSET)
    profile = changes.get("runtime_profile", _UNSET)
    # Views look these up with object_get_for_workspace (404); this is the backstop for other callers.
    if account is not _UNSET and account.workspace_id != deployment.workspace_id:
        raise DomainError("Choose a provider account of this workspace.", field="provider_account")
    if profile is not _UNSET and profile.workspace_id != deployment.workspace_id:
        raise DomainError("Choose a runtime profile of this workspace.", field="runtime_profile")
    if account is not _UNSET and account.status == ProviderAccount.Status.ARCHIVED and account.pk != deployment.provider_account_id:
        raise DomainError(f"The provider account “{account.name}” is archived.", field="provider_account")
    if profile is not _UNSET and profile.status == LifecycleStatus.ARCHIVED and profile.pk != deployment.runtime_profile_id:
        raise DomainError(f"The runtime profile “{profile.name}” is archived.", field="runtime_profile")
    changed = _apply(deployment, changes)
    _check_unique(deployment, "name", "deployment")
    if not isinstance(deployment.deployment_config, dict):
        raise DomainError("Must be a JSON object.", field="deployment_config")
    if deployment.output_schema is not None and not isinstance(deployment.output_schema, dict):
        raise DomainError("Must be a JSON object (a JSON Schema) or empty.", field="output_schema")
    if "endpoint_url" in changed or "runtime_profile" in changed:
        _clean_endpoint_url(deployment)
    hosted = deployment.runtime_profile.execution_target == ExecutionTarget.HOSTED_EXTERNAL  # the team's server runs it
    if deployment.provider_account.provider_key == ProviderKey.SCRIPTED and not hosted:
        if errors := scripted_config_errors(deployment.deployment_config):
            raise DomainError("; ".join(errors), field="deployment_config")
    if deployment.is_default_judge and "is_default_judge" in changed:
        # One default judge per workspace: choosing this one unsets the previous one.
        AgentDeployment.objects.filter(workspace_id=deployment.workspace_id, is_default_judge=True).exclude(pk=deployment.pk).update(
            is_default_judge=False
        )
    _save(deployment, changed, creating=creating)
    if creating or changed:
        action = "deployment.created" if creating else "deployment.updated"
        audit_record(
            workspace=deployment.workspace,
            actor=actor,
            action=action,
            target=deployment.name,
            metadata={} if creating else {"fields": sorted(changed)},
        )
    return deployment


@transaction.atomic
def deployment_create(
    *,
    workspace: Workspace,
    name: str,
    provider_account: ProviderAccount,
    model: str,
    runtime_profile: RuntimeProfile,
    system_prompt: str = "",
    output_schema: dict | None = None,
    deployment_config: dict | None = None,
    is_default_judge: bool = False,
    endpoint_url: str = "",
    actor: Any = None,
) -> AgentDeployment:
    deployment = AgentDeployment(workspace=workspace, created_by=actor_or_none(actor))
    changes = {
        "name": name, "provider_account": provider_account, "model": model, "runtime_profile": runtime_profile,
        "system_prompt": system_prompt or "", "output_schema": output_schema, "deployment_config": deployment_config or {},
        "is_default_judge": bool(is_default_judge), "endpoint_url": (endpoint_url or "").strip(),
    }  # fmt: skip
    return _deployment_write(deployment=deployment, changes=changes, actor=actor, creating=True)


@transaction.atomic
def deployment_update(*, deployment: AgentDeployment, actor: Any = None, **fields: Any) -> AgentDeployment:
    unknown = set(fields) - set(DEPLOYMENT_FIELDS)
    if unknown:
        raise TypeError(f"unknown deployment fields: {sorted(unknown)}")
    deployment = AgentDeployment.objects.select_for_update().select_related("workspace", "provider_account").get(pk=deployment.pk)
    return _deployment_write(deployment=deployment, changes=fields, actor=actor, creating=False)


@transaction.atomic
def deployment_archive(*, deployment: AgentDeployment, actor: Any = None) -> AgentDeployment:
    return _archive(deployment, field="status", actor=actor, action="deployment.archived")


# ------------------------------------------------------------------------------ tool resources
TOOL_RESOURCE_FIELDS = ("name", "slug", "tool_kind", "capability_key", "definition", "lifecycle_status")


def tool_definition_errors(*, tool_kind: str, definition: Any) -> list[str]:
    if not isinstance(definition, dict):
        return ["definition: must be a JSON object"]
    if tool_kind == ToolResource.ToolKind.COMPOSED:
        return [
            f"{error.field}: {error.message}" if error.field else error.message
            for error in validate_composed_tool(definition, field_prefix="definition")
        ]
    primitive = definition.get("primitive")
    if primitive is not None:
        names = [entry["name"] for entry in catalogue()]
        if primitive not in names:
            return [f"definition.primitive: unknown primitive “{primitive}”; use one of {', '.join(names)}"]
    return []


def _tool_resource_write(*, tool: ToolResource, changes: dict[str, Any], actor: Any, creating: bool) -> ToolResource:
    for field in ("name", "slug", "capability_key"):
        if isinstance(changes.get(field), str):
            changes[field] = changes[field].strip()
    if changes.get("definition", _UNSET) is None:
        changes["definition"] = {}
    if creating and not changes.get("slug"):
        changes["slug"] = slugify(changes.get("name") or "")[:100]
    changed = _apply(tool, changes)
    _check_unique(tool, "slug", "tool resource")
    if errors := tool_definition_errors(tool_kind=tool.tool_kind, definition=tool.definition):
        raise DomainError("; ".join(errors), field="definition")
    _save(tool, changed, creating=creating)
    if creating or changed:
        action = "tool_resource.created" if creating else "tool_resource.updated"
        audit_record(
            workspace=tool.workspace, actor=actor, action=action, target=tool.name, metadata={} if creating else {"fields": sorted(changed)}
        )
    return tool


@transaction.atomic
def tool_resource_create(
    *, workspace: Workspace, name: str, tool_kind: str, capability_key: str, slug: str = "", definition: dict | None = None,
    lifecycle_status: str = ToolResource.Lifecycle.ACTIVE, actor: Any = None,
) -> ToolResource:  # fmt: skip
    tool = ToolResource(workspace=workspace)
    changes = {
        "name": name,
        "slug": slug,
        "tool_kind": tool_kind,
        "capability_key": capability_key,
        "definition": definition or {},
        "lifecycle_status": lifecycle_status,
    }
    return _tool_resource_write(tool=tool, changes=changes, actor=actor, creating=True)


@transaction.atomic
def tool_resource_update(*, tool: ToolResource, actor: Any = None, **fields: Any) -> ToolResource:
    unknown = set(fields) - set(TOOL_RESOURCE_FIELDS)
    if unknown:
        raise TypeError(f"unknown tool resource fields: {sorted(unknown)}")
    tool = ToolResource.objects.select_for_update().select_related("workspace").get(pk=tool.pk)
    return _tool_resource_write(tool=tool, changes=fields, actor=actor, creating=False)


@transaction.atomic
def tool_resource_archive(*, tool: ToolResource, actor: Any = None) -> ToolResource:
    return _archive(tool, field="lifecycle_status", actor=actor, action="tool_resource.archived")

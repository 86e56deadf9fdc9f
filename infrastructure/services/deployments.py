"""Writes for agent deployments: a model behind a provider account, run with a runtime profile."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import transaction

from core.actors import actor_or_none
from core.errors import DomainError
from infrastructure import base_url as base_url_rules
from infrastructure.models import AgentDeployment, ExecutionTarget, LifecycleStatus, ProviderAccount, ProviderKey, RuntimeProfile
from infrastructure.scripted_config import scripted_config_errors
from infrastructure.services.owned import UNSET, apply_changes, archive, audit_write, check_known_fields, check_unique, save_checked
from workspaces.models import Workspace

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


def _check_references(deployment: AgentDeployment, changes: dict[str, Any]) -> None:
    """The account and profile being chosen belong to the deployment's workspace and are not archived."""
    account = changes.get("provider_account", UNSET)
    profile = changes.get("runtime_profile", UNSET)
    # Views look these up with object_get_for_workspace (404); this is the backstop for other callers.
    if account is not UNSET and account.workspace_id != deployment.workspace_id:
        raise DomainError("Choose a provider account of this workspace.", field="provider_account")
    if profile is not UNSET and profile.workspace_id != deployment.workspace_id:
        raise DomainError("Choose a runtime profile of this workspace.", field="runtime_profile")
    if account is not UNSET and account.status == ProviderAccount.Status.ARCHIVED and account.pk != deployment.provider_account_id:
        raise DomainError(f"The provider account “{account.name}” is archived.", field="provider_account")
    if profile is not UNSET and profile.status == LifecycleStatus.ARCHIVED and profile.pk != deployment.runtime_profile_id:
        raise DomainError(f"The runtime profile “{profile.name}” is archived.", field="runtime_profile")


def _check_configuration(deployment: AgentDeployment, changed: list[str]) -> None:
    """The JSON fields' shapes, the hosted endpoint, and a scripted account's script."""
    if not isinstance(deployment.deployment_config, dict):
        raise DomainError("The deployment config must be a JSON object.", field="deployment_config")
    if deployment.output_schema is not None and not isinstance(deployment.output_schema, dict):
        raise DomainError("The output schema must be a JSON object (a JSON Schema) or empty.", field="output_schema")
    if "endpoint_url" in changed or "runtime_profile" in changed:
        _clean_endpoint_url(deployment)
    hosted = deployment.runtime_profile.execution_target == ExecutionTarget.HOSTED_EXTERNAL  # the team's server runs it
    if deployment.provider_account.provider_key == ProviderKey.SCRIPTED and not hosted:
        if errors := scripted_config_errors(deployment.deployment_config):
            raise DomainError("; ".join(errors), field="deployment_config")


def _deployment_write(*, deployment: AgentDeployment, changes: dict[str, Any], actor: Any, creating: bool) -> AgentDeployment:
    for field in ("name", "model"):
        if isinstance(changes.get(field), str):
            changes[field] = changes[field].strip()
    if changes.get("deployment_config", UNSET) is None:
        changes["deployment_config"] = {}
    _check_references(deployment, changes)
    changed = apply_changes(deployment, changes)
    check_unique(deployment, "name", "deployment")
    _check_configuration(deployment, changed)
    if deployment.is_default_judge and "is_default_judge" in changed:
        # One default judge per workspace: choosing this one unsets the previous one.
        AgentDeployment.objects.filter(workspace_id=deployment.workspace_id, is_default_judge=True).exclude(pk=deployment.pk).update(
            is_default_judge=False
        )
    save_checked(deployment, changed, creating=creating)
    audit_write(deployment, noun="deployment", changed=changed, creating=creating, actor=actor)
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
    """Change the given fields (``DEPLOYMENT_FIELDS``, and ``status`` for operators)."""
    check_known_fields(fields, (*DEPLOYMENT_FIELDS, "status"), "deployment")
    deployment = AgentDeployment.objects.select_for_update().select_related("workspace", "provider_account").get(pk=deployment.pk)
    return _deployment_write(deployment=deployment, changes=fields, actor=actor, creating=False)


@transaction.atomic
def deployment_archive(*, deployment: AgentDeployment, actor: Any = None) -> AgentDeployment:
    return archive(deployment, field="status", actor=actor, action="deployment.archived")

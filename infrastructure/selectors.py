"""Reads for workspace infrastructure. Archived rows are hidden unless asked for."""

from __future__ import annotations

from typing import Any

from django.db.models import Count, Q, QuerySet

from core.errors import NotFound
from engine.tools.registry import catalogue
from infrastructure.models import (
    AgentDeployment,
    LifecycleStatus,
    ModelPrice,
    ProviderAccount,
    RuntimeProfile,
    SandboxTemplate,
    ToolResource,
)
from workspaces.models import Workspace


def provider_account_list(*, workspace: Workspace, include_archived: bool = False) -> QuerySet[ProviderAccount]:
    accounts = (
        ProviderAccount.objects.filter(workspace=workspace)
        .select_related("created_by")
        .annotate(deployment_count=Count("deployments", filter=~Q(deployments__status=LifecycleStatus.ARCHIVED)))
    )
    if not include_archived:
        accounts = accounts.exclude(status=ProviderAccount.Status.ARCHIVED)
    return accounts.order_by("name")


def runtime_profile_list(*, workspace: Workspace, include_archived: bool = False) -> QuerySet[RuntimeProfile]:
    profiles = RuntimeProfile.objects.filter(workspace=workspace)
    if not include_archived:
        profiles = profiles.exclude(status=LifecycleStatus.ARCHIVED)
    return profiles.order_by("name")


def deployment_list(*, workspace: Workspace, include_archived: bool = False) -> QuerySet[AgentDeployment]:
    deployments = AgentDeployment.objects.filter(workspace=workspace).select_related("provider_account", "runtime_profile", "created_by")
    if not include_archived:
        deployments = deployments.exclude(status=LifecycleStatus.ARCHIVED)
    return deployments.order_by("name")


def tool_resource_list(*, workspace: Workspace, include_archived: bool = False) -> QuerySet[ToolResource]:
    tools = ToolResource.objects.filter(workspace=workspace)
    if not include_archived:
        tools = tools.exclude(lifecycle_status=ToolResource.Lifecycle.ARCHIVED)
    return tools.order_by("name")


def primitive_catalogue() -> list[dict[str, Any]]:
    """The engine's primitives; the registry is the only list."""

    return catalogue()


def model_price_rows(*, workspace_id: int) -> list[dict[str, Any]]:
    """The workspace's price overrides as ``pricing.models`` rows, for scoring."""
    return [price.as_pricing_row() for price in ModelPrice.objects.filter(workspace_id=workspace_id)]


def sandbox_template_list() -> QuerySet[SandboxTemplate]:
    return SandboxTemplate.objects.order_by("template_id")


def sandbox_template_get(*, template_id: str) -> SandboxTemplate:
    template = SandboxTemplate.objects.filter(template_id=template_id).first()
    if template is None:
        raise NotFound(f"Sandbox template “{template_id}” not found.", field="template_id")
    return template

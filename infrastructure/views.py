"""Infrastructure pages: provider accounts (admins manage), runtime profiles and deployments
(members manage), tool resources (admins manage), the primitive catalogue (read-only).

Each collection has a list page with a create dialog, an edit dialog and an archive button;
see ``dialogs.py`` for how one view serves the dialog, the form partial and the plain page.
"""

from __future__ import annotations

import json
from typing import Any

from django.contrib import messages
from django.db.models import Manager, QuerySet
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST

from core.dialogs import dialog_save
from infrastructure import selectors, services
from infrastructure.forms import (
    DeploymentForm,
    ProviderAccountEditForm,
    ProviderAccountForm,
    RuntimeProfileForm,
    ToolResourceForm,
)
from infrastructure.models import PROVIDER_LIMIT_FIELDS, AgentDeployment, ProviderAccount, RuntimeProfile, ToolResource
from workspaces.access import WorkspaceRequest, can, object_get_for_workspace, workspace_view
from workspaces.models import Role


def _url(name: str, request: WorkspaceRequest, *args: Any) -> str:
    return reverse(f"infra:{name}", args=[request.workspace.slug, *args])


def _include_archived(request: WorkspaceRequest) -> bool:
    return request.GET.get("archived") == "1"


def _form_context(request: WorkspaceRequest, form: Any, *, create_name: str, form_id: str, list_name: str) -> dict[str, Any]:
    """Context for the create dialog embedded in a list page."""
    return {
        "form": form,
        "action": _url(create_name, request),
        "cancel_url": _url(list_name, request),
        "form_id": form_id,
        "submit_label": "Create",
    }


def _save_dialog(
    request: WorkspaceRequest,
    *,
    form: Any,
    save: Any,
    title: str,
    submit_label: str,
    action: str,
    list_name: str,
    section_title: str,
    form_id: str,
    success: str,
    intro: str = "",
) -> HttpResponse:
    """Validate the form, call ``save(cleaned_data)`` (a service), answer like dialogs.py says."""
    return dialog_save(
        request,
        form=form,
        save=save,
        success=lambda obj: success.format(name=getattr(obj, "name", "")),
        list_url=_url(list_name, request),
        action=action,
        title=title,
        submit_label=submit_label,
        section_title=section_title,
        form_id=form_id,
        intro=intro,
    )


def _archive(
    request: WorkspaceRequest, queryset: QuerySet[Any] | Manager[Any], pk: int, archive: Any, list_name: str, label: str
) -> HttpResponse:
    obj = object_get_for_workspace(queryset.select_related("workspace"), workspace=request.workspace, pk=pk)
    archive(obj)
    messages.success(request, f"{label} “{obj.name}” archived.")
    return redirect(_url(list_name, request))


# ------------------------------------------------------------------------------ provider accounts
PROVIDER_INTRO = "A provider account is how deployments reach a model. Scripted accounts run offline for demos and tests."


@workspace_view()
def provider_accounts(request: WorkspaceRequest) -> HttpResponse:
    context = {
        "accounts": selectors.provider_account_list(workspace=request.workspace, include_archived=_include_archived(request)),
        "can_manage": can(request.membership, Role.ADMIN),
        "show_archived": _include_archived(request),
        **_form_context(
            request,
            ProviderAccountForm(),
            create_name="provider_account_create",
            form_id="provider-account-form",
            list_name="provider_accounts",
        ),
    }
    return render(request, "infrastructure/provider_accounts.html", context)


@workspace_view(role=Role.ADMIN)
@require_http_methods(["GET", "POST"])
def provider_account_create(request: WorkspaceRequest) -> HttpResponse:
    form = ProviderAccountForm(request.POST or None)
    return _save_dialog(
        request,
        form=form,
        save=lambda data: services.provider_account_create(workspace=request.workspace, actor=request.user, **data),
        title="New provider account",
        submit_label="Create",
        action=_url("provider_account_create", request),
        list_name="provider_accounts",
        section_title="Provider accounts",
        form_id="provider-account-form",
        success="Provider account “{name}” created. Use “Test connection” to check it.",
        intro=PROVIDER_INTRO,
    )


@workspace_view(role=Role.ADMIN)
@require_http_methods(["GET", "POST"])
def provider_account_edit(request: WorkspaceRequest, pk: int) -> HttpResponse:
    account = object_get_for_workspace(ProviderAccount.objects, workspace=request.workspace, pk=pk)
    initial = {
        f: getattr(account, f) for f in ("name", "provider_key", "credential_reference", "base_url", "status", *PROVIDER_LIMIT_FIELDS)
    }
    form = ProviderAccountEditForm(request.POST or None, initial=initial)
    return _save_dialog(
        request,
        form=form,
        save=lambda data: services.provider_account_update(account=account, actor=request.user, **data),
        title=f"Edit {account.name}",
        submit_label="Save",
        action=_url("provider_account_edit", request, pk),
        list_name="provider_accounts",
        section_title="Provider accounts",
        form_id="provider-account-edit-form",
        success="Provider account “{name}” saved.",
        intro="Leave the API key empty to keep the current credential.",
    )


@workspace_view(role=Role.ADMIN)
@require_POST
def provider_account_archive(request: WorkspaceRequest, pk: int) -> HttpResponse:
    return _archive(
        request,
        ProviderAccount.objects,
        pk,
        lambda obj: services.provider_account_archive(account=obj, actor=request.user),
        "provider_accounts",
        "Provider account",
    )


@workspace_view(role=Role.ADMIN)
@require_POST
def provider_account_test(request: WorkspaceRequest, pk: int) -> HttpResponse:
    account = object_get_for_workspace(ProviderAccount.objects.select_related("workspace"), workspace=request.workspace, pk=pk)
    result = services.provider_account_test_connection(account=account, actor=request.user)
    if request.htmx:
        return render(request, "infrastructure/provider_accounts.html#provider-test", {"account": account, "can_manage": True})
    (messages.success if result.ok else messages.error)(request, f"{account.name}: {result.message}")
    return redirect(_url("provider_accounts", request))


# ------------------------------------------------------------------------------ runtime profiles
@workspace_view()
def runtime_profiles(request: WorkspaceRequest) -> HttpResponse:
    context = {
        "profiles": selectors.runtime_profile_list(workspace=request.workspace, include_archived=_include_archived(request)),
        "can_manage": can(request.membership, Role.MEMBER),
        "show_archived": _include_archived(request),
        **_form_context(
            request,
            RuntimeProfileForm(),
            create_name="runtime_profile_create",
            form_id="runtime-profile-form",
            list_name="runtime_profiles",
        ),
    }
    return render(request, "infrastructure/runtime_profiles.html", context)


@workspace_view(role=Role.MEMBER)
@require_http_methods(["GET", "POST"])
def runtime_profile_create(request: WorkspaceRequest) -> HttpResponse:
    return _save_dialog(
        request,
        form=RuntimeProfileForm(request.POST or None),
        save=lambda data: services.runtime_profile_create(workspace=request.workspace, actor=request.user, **data),
        title="New runtime profile",
        submit_label="Create",
        action=_url("runtime_profile_create", request),
        list_name="runtime_profiles",
        section_title="Runtime profiles",
        form_id="runtime-profile-form",
        success="Runtime profile “{name}” created.",
    )


@workspace_view(role=Role.MEMBER)
@require_http_methods(["GET", "POST"])
def runtime_profile_edit(request: WorkspaceRequest, pk: int) -> HttpResponse:
    profile = object_get_for_workspace(RuntimeProfile.objects, workspace=request.workspace, pk=pk)
    form = RuntimeProfileForm(request.POST or None, initial={f: getattr(profile, f) for f in services.RUNTIME_PROFILE_FIELDS})
    return _save_dialog(
        request,
        form=form,
        save=lambda data: services.runtime_profile_update(profile=profile, actor=request.user, **data),
        title=f"Edit {profile.name}",
        submit_label="Save",
        action=_url("runtime_profile_edit", request, pk),
        list_name="runtime_profiles",
        section_title="Runtime profiles",
        form_id="runtime-profile-edit-form",
        success="Runtime profile “{name}” saved.",
    )


@workspace_view(role=Role.MEMBER)
@require_POST
def runtime_profile_archive(request: WorkspaceRequest, pk: int) -> HttpResponse:
    return _archive(
        request,
        RuntimeProfile.objects,
        pk,
        lambda obj: services.runtime_profile_archive(profile=obj, actor=request.user),
        "runtime_profiles",
        "Runtime profile",
    )


# ------------------------------------------------------------------------------ deployments
@workspace_view()
def deployments(request: WorkspaceRequest) -> HttpResponse:
    context = {
        "deployments": selectors.deployment_list(workspace=request.workspace, include_archived=_include_archived(request)),
        "can_manage": can(request.membership, Role.MEMBER),
        "show_archived": _include_archived(request),
        "has_accounts": selectors.provider_account_list(workspace=request.workspace).exists(),
        "has_profiles": selectors.runtime_profile_list(workspace=request.workspace).exists(),
        **_form_context(
            request,
            DeploymentForm(workspace=request.workspace),
            create_name="deployment_create",
            form_id="deployment-form",
            list_name="deployments",
        ),
    }
    return render(request, "infrastructure/deployments.html", context)


def _deployment_kwargs(data: dict[str, Any]) -> dict[str, Any]:
    return {**data, "deployment_config": data.get("deployment_config") or {}}


@workspace_view(role=Role.MEMBER)
@require_http_methods(["GET", "POST"])
def deployment_create(request: WorkspaceRequest) -> HttpResponse:
    return _save_dialog(
        request,
        form=DeploymentForm(request.POST or None, workspace=request.workspace),
        save=lambda data: services.deployment_create(workspace=request.workspace, actor=request.user, **_deployment_kwargs(data)),
        title="New deployment",
        submit_label="Create",
        action=_url("deployment_create", request),
        list_name="deployments",
        section_title="Deployments",
        form_id="deployment-form",
        success="Deployment “{name}” created. It can now race in runs.",
    )


@workspace_view(role=Role.MEMBER)
@require_http_methods(["GET", "POST"])
def deployment_edit(request: WorkspaceRequest, pk: int) -> HttpResponse:
    deployment = object_get_for_workspace(AgentDeployment.objects, workspace=request.workspace, pk=pk)
    initial = {f: getattr(deployment, f) for f in services.DEPLOYMENT_FIELDS}
    return _save_dialog(
        request,
        form=DeploymentForm(request.POST or None, workspace=request.workspace, initial=initial),
        save=lambda data: services.deployment_update(deployment=deployment, actor=request.user, **_deployment_kwargs(data)),
        title=f"Edit {deployment.name}",
        submit_label="Save",
        action=_url("deployment_edit", request, pk),
        list_name="deployments",
        section_title="Deployments",
        form_id="deployment-edit-form",
        success="Deployment “{name}” saved. Runs started earlier keep the version they used.",
    )


@workspace_view(role=Role.MEMBER)
@require_POST
def deployment_archive(request: WorkspaceRequest, pk: int) -> HttpResponse:
    return _archive(
        request,
        AgentDeployment.objects,
        pk,
        lambda obj: services.deployment_archive(deployment=obj, actor=request.user),
        "deployments",
        "Deployment",
    )


# ------------------------------------------------------------------------------ tool resources
@workspace_view()
def tool_resources(request: WorkspaceRequest) -> HttpResponse:
    context = {
        "tools": selectors.tool_resource_list(workspace=request.workspace, include_archived=_include_archived(request)),
        "can_manage": can(request.membership, Role.ADMIN),
        "show_archived": _include_archived(request),
        **_form_context(
            request, ToolResourceForm(), create_name="tool_resource_create", form_id="tool-resource-form", list_name="tool_resources"
        ),
    }
    return render(request, "infrastructure/tool_resources.html", context)


@workspace_view(role=Role.ADMIN)
@require_http_methods(["GET", "POST"])
def tool_resource_create(request: WorkspaceRequest) -> HttpResponse:
    return _save_dialog(
        request,
        form=ToolResourceForm(request.POST or None),
        save=lambda data: services.tool_resource_create(workspace=request.workspace, actor=request.user, **data),
        title="New tool resource",
        submit_label="Create",
        action=_url("tool_resource_create", request),
        list_name="tool_resources",
        section_title="Tool resources",
        form_id="tool-resource-form",
        success="Tool resource “{name}” created.",
    )


@workspace_view(role=Role.ADMIN)
@require_http_methods(["GET", "POST"])
def tool_resource_edit(request: WorkspaceRequest, pk: int) -> HttpResponse:
    tool = object_get_for_workspace(ToolResource.objects, workspace=request.workspace, pk=pk)
    initial = {f: getattr(tool, f) for f in services.TOOL_RESOURCE_FIELDS}
    return _save_dialog(
        request,
        form=ToolResourceForm(request.POST or None, initial=initial),
        save=lambda data: services.tool_resource_update(tool=tool, actor=request.user, **data),
        title=f"Edit {tool.name}",
        submit_label="Save",
        action=_url("tool_resource_edit", request, pk),
        list_name="tool_resources",
        section_title="Tool resources",
        form_id="tool-resource-edit-form",
        success="Tool resource “{name}” saved.",
    )


@workspace_view(role=Role.ADMIN)
@require_POST
def tool_resource_archive(request: WorkspaceRequest, pk: int) -> HttpResponse:
    return _archive(
        request,
        ToolResource.objects,
        pk,
        lambda obj: services.tool_resource_archive(tool=obj, actor=request.user),
        "tool_resources",
        "Tool resource",
    )


@workspace_view()
def primitives(request: WorkspaceRequest) -> HttpResponse:
    entries = [
        {**entry, "parameters_json": json.dumps(entry.get("parameters") or {}, indent=2)} for entry in selectors.primitive_catalogue()
    ]
    return render(request, "infrastructure/primitives.html", {"primitives": entries})

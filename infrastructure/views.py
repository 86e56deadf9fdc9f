"""Infrastructure pages: provider accounts (admins manage), runtime profiles and deployments
(members manage), tool resources (admins manage), the primitive catalogue (read-only).

Each collection has a list page with a create dialog, an edit dialog and an archive button, all
from one pattern (``infrastructure/crud.py``); a collection states only its forms and words here.
"""

from __future__ import annotations

import json
from typing import Any

from django.contrib import messages
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from infrastructure import selectors, services
from infrastructure.crud import DEPLOYMENTS, PROVIDER_ACCOUNTS, RUNTIME_PROFILES, TOOL_RESOURCES, Pages, crud_views
from infrastructure.forms import DeploymentForm, ProviderAccountEditForm, ProviderAccountForm, RuntimeProfileForm, ToolResourceForm
from workspaces.access import WorkspaceRequest, workspace_view
from workspaces.models import Role, Workspace


def _deployment_prerequisites(workspace: Workspace) -> dict[str, Any]:
    """What the empty state and the "New" button need: a deployment needs an account and a profile."""
    return {
        "has_accounts": selectors.provider_account_list(workspace=workspace).exists(),
        "has_profiles": selectors.runtime_profile_list(workspace=workspace).exists(),
    }


PROVIDER_ACCOUNT_PAGES = Pages(
    entity=PROVIDER_ACCOUNTS,
    form=ProviderAccountForm,
    edit_form=ProviderAccountEditForm,
    intro=(
        "A provider account is how deployments reach a model. A scripted account runs offline and needs no credential; "
        "for a model provider, reference a workspace secret or paste a key."
    ),
    edit_intro="Leave the API key empty to keep the current credential.",
    created_note="Use “Test connection” to check it.",
    archive_note="Deployments using it keep working in past runs but it cannot be chosen for new deployments.",
)
RUNTIME_PROFILE_PAGES = Pages(entity=RUNTIME_PROFILES, form=RuntimeProfileForm)
DEPLOYMENT_PAGES = Pages(
    entity=DEPLOYMENTS,
    form=DeploymentForm,
    form_kwargs=lambda workspace: {"workspace": workspace},
    list_context=_deployment_prerequisites,
    created_note="It can now race in runs.",
    saved_note="Runs started earlier keep the version they used.",
)
TOOL_RESOURCE_PAGES = Pages(entity=TOOL_RESOURCES, form=ToolResourceForm)

provider_accounts, provider_account_create, provider_account_edit, provider_account_archive = crud_views(PROVIDER_ACCOUNT_PAGES)
runtime_profiles, runtime_profile_create, runtime_profile_edit, runtime_profile_archive = crud_views(RUNTIME_PROFILE_PAGES)
deployments, deployment_create, deployment_edit, deployment_archive = crud_views(DEPLOYMENT_PAGES)
tool_resources, tool_resource_create, tool_resource_edit, tool_resource_archive = crud_views(TOOL_RESOURCE_PAGES)


@workspace_view(role=Role.ADMIN)
@require_POST
def provider_account_test(request: WorkspaceRequest, pk: int) -> HttpResponse:
    account = PROVIDER_ACCOUNTS.get(workspace=request.workspace, pk=pk)
    result = services.provider_account_test_connection(account=account, actor=request.user)
    if request.htmx:
        return render(request, "infrastructure/provider_accounts.html#provider-test", {"account": account, "can_manage": True})
    (messages.success if result.ok else messages.error)(request, f"{account.name}: {result.message}")
    return redirect(reverse("infra:provider_accounts", args=[request.workspace.slug]))


@workspace_view()
def primitives(request: WorkspaceRequest) -> HttpResponse:
    entries = [
        {**entry, "parameters_json": json.dumps(entry.get("parameters") or {}, indent=2)} for entry in selectors.primitive_catalogue()
    ]
    return render(request, "infrastructure/primitives.html", {"primitives": entries})

"""Secrets pages: the key list (everyone), add/edit and delete (admins), the audit log (admins)."""

from __future__ import annotations

from urllib.parse import urlencode

from django.contrib import messages
from django.core.paginator import Paginator
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST

from core.dialogs import dialog_save
from secrets_app import selectors, services
from secrets_app.forms import SecretSetForm
from secrets_app.models import WorkspaceSecret
from workspaces.access import WorkspaceRequest, can, object_get_for_workspace, workspace_view
from workspaces.models import Role

SET_INTRO = (
    "Saving an existing key replaces its value (or keeps it, if you leave the value blank) and its allowed hosts. "
    "Values are encrypted and can never be read back."
)


@workspace_view()
def secret_list(request: WorkspaceRequest) -> HttpResponse:
    slug = request.workspace.slug
    return render(
        request,
        "secrets_app/secret_list.html",
        {
            "title": "Secrets",
            "objects": selectors.secret_list(workspace=request.workspace),
            "can_manage": can(request.membership, Role.ADMIN),
            # the "add" dialog the list page holds
            "form": SecretSetForm(),
            "action": reverse("secrets_app:set", args=[slug]),
            "cancel_url": reverse("secrets_app:list", args=[slug]),
            "form_id": "secret-form",
            "submit_label": "Save secret",
            "new_label": "Add a secret",
            "intro": SET_INTRO,
        },
    )


@workspace_view(role=Role.ADMIN)
@require_http_methods(["GET", "POST"])
def secret_set(request: WorkspaceRequest) -> HttpResponse:
    slug = request.workspace.slug
    list_url = reverse("secrets_app:list", args=[slug])
    # ?key= names the secret the Edit dialog edits (its form posts back to the same address).
    editing = (request.GET.get("key") or "").strip()
    key = editing or ((request.POST.get("key") if request.method == "POST" else "") or "")
    existing = selectors.secret_get(workspace=request.workspace, key=key.strip()) if key.strip() else None
    initial = {"key": key, "allowed_hosts": "\n".join(existing.allowed_hosts) if existing else ""}
    form = SecretSetForm(
        request.POST or None, initial=initial, editing=existing is not None, locked_key=existing.key if existing and editing else ""
    )
    return dialog_save(
        request,
        form=form,
        save=lambda data: services.secret_set(workspace=request.workspace, actor=request.user, **data),
        success=lambda saved: f"Secret {saved[0].key} {'saved' if saved[1] else 'updated'}.",
        list_url=list_url,
        action=reverse("secrets_app:set", args=[slug]) + (f"?{urlencode({'key': existing.key})}" if existing and editing else ""),
        title=f"Edit {existing.key}" if existing else "Add a secret",
        submit_label="Save secret",
        section_title="Secrets",
        form_id="secret-edit-form" if existing else "secret-form",  # the list page holds the "add" dialog's ids
        intro=SET_INTRO,
    )


@workspace_view(role=Role.ADMIN)
@require_POST
def secret_delete(request: WorkspaceRequest, key: str) -> HttpResponse:
    secret = object_get_for_workspace(WorkspaceSecret.objects.select_related("workspace"), workspace=request.workspace, key=key)
    services.secret_delete(secret=secret, actor=request.user)
    messages.success(request, f"Secret {key} deleted.")
    return redirect("secrets_app:list", workspace_slug=request.workspace.slug)


@workspace_view(role=Role.ADMIN)
def audit_list(request: WorkspaceRequest) -> HttpResponse:
    action = request.GET.get("action", "").strip()
    events = selectors.audit_event_list(workspace=request.workspace, action_prefix=action)
    page = Paginator(events, 50).get_page(request.GET.get("page"))
    return render(request, "secrets_app/audit_list.html", {"page": page, "action": action})

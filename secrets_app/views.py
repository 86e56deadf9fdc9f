"""Secrets pages: the key list (everyone), set/replace and delete (admins), the audit log (admins)."""

from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST

from core.dialogs import dialog_form_response, dialog_success
from secrets_app import selectors, services
from secrets_app.forms import SecretSetForm
from secrets_app.models import WorkspaceSecret
from workspaces.access import object_get_for_workspace, workspace_view
from workspaces.models import Role


@workspace_view()
def secret_list(request: HttpRequest) -> HttpResponse:
    slug = request.workspace.slug
    return render(
        request,
        "secrets_app/secret_list.html",
        {
            "secrets": selectors.secret_list(workspace=request.workspace),
            "set_form": SecretSetForm(),
            "form": SecretSetForm(),
            "action": reverse("secrets_app:set", args=[slug]),
            "cancel_url": reverse("secrets_app:list", args=[slug]),
            "form_id": "secret-form",
            "submit_label": "Save secret",
        },
    )


@workspace_view(role=Role.ADMIN)
@require_http_methods(["GET", "POST"])
def secret_set(request: HttpRequest) -> HttpResponse:
    slug = request.workspace.slug
    list_url = reverse("secrets_app:list", args=[slug])
    form = SecretSetForm(request.POST or None, initial={"key": request.GET.get("key", "")})
    if request.method == "POST" and form.is_valid():
        try:
            secret, created = services.secret_set(
                workspace=request.workspace, key=form.cleaned_data["key"], value=form.cleaned_data["value"], actor=request.user
            )
        except ValidationError as exc:
            form.add_error(None, exc)
        else:
            return dialog_success(request, url=list_url, message=f"Secret {secret.key} {'saved' if created else 'replaced'}.")
    replacing = bool(request.GET.get("key"))
    return dialog_form_response(
        request,
        form=form,
        action=reverse("secrets_app:set", args=[slug]),
        title="Replace a secret" if replacing else "Add a secret",
        submit_label="Save secret",
        cancel_url=list_url,
        section_title="Secrets",
        form_id="secret-form",
        intro="Saving an existing key replaces its value. Values are encrypted and can never be read back.",
    )


@workspace_view(role=Role.ADMIN)
@require_POST
def secret_delete(request: HttpRequest, key: str) -> HttpResponse:
    secret = object_get_for_workspace(WorkspaceSecret.objects.select_related("workspace"), workspace=request.workspace, key=key)
    services.secret_delete(secret=secret, actor=request.user)
    messages.success(request, f"Secret {key} deleted.")
    return redirect("secrets_app:list", workspace_slug=request.workspace.slug)


@workspace_view(role=Role.ADMIN)
def audit_list(request: HttpRequest) -> HttpResponse:
    action = request.GET.get("action", "").strip()
    events = selectors.audit_event_list(workspace=request.workspace, action_prefix=action)
    page = Paginator(events, 50).get_page(request.GET.get("page"))
    return render(request, "secrets_app/audit_list.html", {"page": page, "action": action})

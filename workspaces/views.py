"""Tenancy pages: home, workspace creation, dashboard, members, API tokens, health."""

from __future__ import annotations

from datetime import timedelta
from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db import connection
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from core.errors import DomainError
from core.forms import form_add_domain_error
from workspaces import selectors, services
from workspaces.access import WorkspaceRequest, object_get_for_workspace, workspace_view
from workspaces.forms import ApiTokenCreateForm, InvitationForm, MemberAddForm, MemberRoleForm, WorkspaceCreateForm
from workspaces.models import ApiToken, Role, TokenScope, WorkspaceMembership


@login_required
def home(request: HttpRequest) -> HttpResponse:
    membership = selectors.memberships_for_user(user=request.user).first()
    if membership is None:
        return redirect("workspaces:create")
    return redirect("workspaces:dashboard", workspace_slug=membership.workspace.slug)


@login_required
@require_http_methods(["GET", "POST"])
def workspace_create(request: HttpRequest) -> HttpResponse:
    form = WorkspaceCreateForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            workspace = services.workspace_create(name=form.cleaned_data["name"], slug=form.cleaned_data["slug"], admin=request.user)
        except DomainError as error:
            form_add_domain_error(form, error)
        else:
            messages.success(request, f"Workspace “{workspace.name}” created. You are its admin.")
            return redirect("workspaces:dashboard", workspace_slug=workspace.slug)
    return render(request, "workspaces/workspace_create.html", {"form": form})


@workspace_view()
def dashboard(request: WorkspaceRequest) -> HttpResponse:
    from workspaces.dashboard import dashboard_context

    return render(request, "workspaces/dashboard.html", dashboard_context(workspace=request.workspace))


@workspace_view()
def members(request: WorkspaceRequest) -> HttpResponse:
    context = {"memberships": selectors.members_of(workspace=request.workspace), "add_form": MemberAddForm(), "roles": Role.choices}
    if request.membership.has_role(Role.ADMIN):
        context["invite_form"] = InvitationForm()
        context["invitations"] = selectors.invitations_of(workspace=request.workspace)[:20]
        context["new_invitation"] = request.session.pop(NEW_INVITATION_SESSION_KEY, None)
    return render(request, "workspaces/members.html", context)


# The new invitation's link waits in the session for the one page view after the redirect.
NEW_INVITATION_SESSION_KEY = "invitation_shown_once"


@workspace_view(role=Role.ADMIN)
@require_POST
def member_invite(request: WorkspaceRequest) -> HttpResponse:
    """Invite someone by email: the link (with its single-use token) is shown once, on the members page."""
    form = InvitationForm(request.POST)
    if form.is_valid():
        try:
            invitation, raw = services.invitation_create(workspace=request.workspace, actor=request.user, **form.cleaned_data)
        except DomainError as error:
            messages.error(request, error.message)
        else:
            link = request.build_absolute_uri(reverse("workspaces:invitation_accept") + "?" + urlencode({"token": raw}))
            request.session[NEW_INVITATION_SESSION_KEY] = {"email": invitation.email, "link": link}
    else:
        for field, errors in form.errors.items():
            messages.error(request, f"{field}: {' '.join(str(error) for error in errors)}")
    return redirect("workspaces:members", workspace_slug=request.workspace.slug)


@workspace_view(role=Role.ADMIN)
@require_POST
def member_add(request: WorkspaceRequest) -> HttpResponse:
    form = MemberAddForm(request.POST)
    if form.is_valid():
        username, role = form.cleaned_data["username"].strip(), form.cleaned_data["role"]
        try:
            services.membership_add_by_username(workspace=request.workspace, username=username, role=role, actor=request.user)
        except DomainError as error:
            messages.error(request, error.message)
        else:
            messages.info(request, services.member_added_message(username=username, role=role))
    else:
        for field, errors in form.errors.items():
            messages.error(request, f"{field}: {' '.join(str(error) for error in errors)}")
    return redirect("workspaces:members", workspace_slug=request.workspace.slug)


def _membership(request: WorkspaceRequest, pk: int) -> WorkspaceMembership:
    return object_get_for_workspace(WorkspaceMembership.objects.select_related("user", "workspace"), workspace=request.workspace, pk=pk)


@workspace_view(role=Role.ADMIN)
@require_POST
def member_update(request: WorkspaceRequest, pk: int) -> HttpResponse:
    membership = _membership(request, pk)
    form = MemberRoleForm(request.POST)
    if form.is_valid():
        try:
            services.membership_update(membership=membership, role=form.cleaned_data["role"], actor=request.user)
            messages.success(request, f"{membership.user.username} is now {form.cleaned_data['role']}.")
        except DomainError as error:
            messages.error(request, error.message)
    else:
        messages.error(request, "Choose a valid role.")
    return redirect("workspaces:members", workspace_slug=request.workspace.slug)


@workspace_view(role=Role.ADMIN)
@require_POST
def member_remove(request: WorkspaceRequest, pk: int) -> HttpResponse:
    membership = _membership(request, pk)
    try:
        services.membership_remove(membership=membership, actor=request.user)
        messages.success(request, f"Removed {membership.user.username}.")
    except DomainError as error:
        messages.error(request, error.message)
    return redirect("workspaces:members", workspace_slug=request.workspace.slug)


@workspace_view()
@require_POST
def member_leave(request: WorkspaceRequest) -> HttpResponse:
    try:
        services.membership_leave(workspace=request.workspace, user=request.user)
    except DomainError as error:
        messages.error(request, error.message)
        return redirect("workspaces:members", workspace_slug=request.workspace.slug)
    messages.success(request, f"You left “{request.workspace.name}”.")
    return redirect("home")


# The new token's value waits in the session for the one page view after the redirect
# (post/redirect/get: reloading that page must not create a second token).
NEW_TOKEN_SESSION_KEY = "api_token_shown_once"


@login_required
@require_http_methods(["GET", "POST"])
@never_cache
def api_tokens(request: HttpRequest) -> HttpResponse:
    memberships = list(selectors.memberships_for_user(user=request.user))
    form = ApiTokenCreateForm(request.POST or None, workspaces=[(m.workspace.slug, m.workspace.name) for m in memberships])
    if request.method == "POST" and form.is_valid():
        days = form.cleaned_data.get("expires_in_days")
        expires_at = timezone.now() + timedelta(days=days) if days else None
        workspace = next((m.workspace for m in memberships if m.workspace.slug == form.cleaned_data.get("workspace")), None)
        try:
            token, value = services.api_token_create(
                user=request.user,
                name=form.cleaned_data["name"],
                expires_at=expires_at,
                workspace=workspace,
                scope=form.cleaned_data.get("scope") or TokenScope.ADMIN,
            )
        except DomainError as exc:
            form_add_domain_error(form, exc)
        else:
            request.session[NEW_TOKEN_SESSION_KEY] = {"id": token.pk, "name": token.name, "value": value}
            return redirect("workspaces:api_tokens")
    new_token = request.session.pop(NEW_TOKEN_SESSION_KEY, None) if request.method == "GET" else None
    return render(
        request,
        "workspaces/api_tokens.html",
        {"tokens": selectors.api_tokens_for_user(user=request.user), "form": form, "new_token": new_token},
    )


@login_required
@require_POST
def api_token_revoke(request: HttpRequest, pk: int) -> HttpResponse:
    token = get_object_or_404(ApiToken, pk=pk, user=request.user)
    services.api_token_revoke(token=token)
    messages.success(request, f"Revoked “{token.name}”.")
    return redirect("workspaces:api_tokens")


def _broker_ok() -> tuple[bool, str]:
    from celery import current_app as app

    try:
        with app.connection_for_write() as conn:
            conn.ensure_connection(max_retries=1, timeout=2)
    except Exception as exc:  # noqa: BLE001 - any broker failure is reported, not raised
        return False, type(exc).__name__
    return True, "ok"


@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    body: dict[str, str] = {}
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
        body["db"] = "ok"
    except Exception as exc:  # noqa: BLE001
        body["db"] = f"error: {type(exc).__name__}"
    ok, detail = _broker_ok()
    body["broker"] = "ok" if ok else f"error: {detail}"
    status = 200 if all(value == "ok" for value in body.values()) else 503
    return JsonResponse(body, status=status)


@login_required
@require_http_methods(["GET", "POST"])
@never_cache
def invitation_accept(request: HttpRequest) -> HttpResponse:
    """The link an invited person follows: who invites them where, and a button to join (signed in
    with the invited email; the login page brings them back here)."""
    token = (request.POST.get("token") if request.method == "POST" else request.GET.get("token")) or ""
    error = ""
    invitation = None
    try:
        invitation = services.invitation_find(token=token)
        if request.method == "POST":
            membership = services.invitation_accept(token=token, user=request.user)
            messages.success(request, f"You joined “{membership.workspace.name}” as {membership.role}.")
            return redirect("workspaces:dashboard", workspace_slug=membership.workspace.slug)
    except DomainError as exc:
        error = exc.message
    return render(request, "workspaces/invitation_accept.html", {"invitation": invitation, "token": token, "error": error})

"""Pack pages: list, detail, version, YAML editor (validate → publish), library."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.core.paginator import Paginator
from django.http import HttpResponse, HttpResponseRedirect
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from core.errors import DomainError
from packs import catalog, selectors, services
from packs.forms import PackLifecycleForm, PackSourceForm, PackVersionLifecycleForm
from packs.models import Pack, PackVersion
from packs.version_summary import version_summary
from workspaces.access import WorkspaceRequest, can, object_get_for_workspace, workspace_view
from workspaces.models import Role

CASES_PER_PAGE = 25


@workspace_view()
@require_GET
def pack_list(request: WorkspaceRequest) -> HttpResponse:
    packs = list(selectors.pack_list(workspace=request.workspace))
    return render(request, "packs/pack_list.html", {"packs": packs, "can_write": can(request.membership, Role.MEMBER)})


@workspace_view()
@require_GET
def pack_detail(request: WorkspaceRequest, pk: int) -> HttpResponse:
    pack = selectors.pack_get(workspace=request.workspace, pk=pk)
    return render(
        request,
        "packs/pack_detail.html",
        {
            "pack": pack,
            "versions": selectors.pack_versions(pack=pack),
            "can_write": can(request.membership, Role.MEMBER),
            "pack_lifecycles": Pack.Lifecycle.choices,
            "version_lifecycles": PackVersion.Lifecycle.choices,
        },
    )


def _cases_context(request: WorkspaceRequest, version: PackVersion, input_sets: list) -> dict[str, Any]:
    selected = None
    wanted = request.GET.get("input_set")
    if wanted:
        selected = next((s for s in input_sets if str(s.pk) == wanted), None)
    if selected is None and input_sets:
        selected = input_sets[0]
    page = None
    if selected is not None:
        page = Paginator(selectors.cases_of(input_set=selected), CASES_PER_PAGE).get_page(request.GET.get("page"))
    return {"selected_input_set": selected, "cases_page": page}


@workspace_view()
@require_GET
def version_detail(request: WorkspaceRequest, pk: int) -> HttpResponse:
    version = selectors.pack_version_get(workspace=request.workspace, pk=pk)
    input_sets = list(selectors.input_sets_of(version=version))
    context: dict[str, Any] = {"version": version, "pack": version.pack, "input_sets": input_sets}
    context.update(_cases_context(request, version, input_sets))
    if request.htmx and request.htmx.target == "cases":
        return render(request, "packs/version_detail.html#cases", context)
    context.update(
        {
            "challenges": version.challenges.all(),
            "summary": version_summary(version.manifest),
            "secrets": selectors.version_secret_status(version=version),
            "can_write": can(request.membership, Role.MEMBER),
            "version_lifecycles": PackVersion.Lifecycle.choices,
            "run_url": f"{reverse('runs:list', args=[request.workspace.slug]).rstrip('/')}/new/?pack_version={version.pk}",
        }
    )
    return render(request, "packs/version_detail.html", context)


@workspace_view()
@require_GET
def version_yaml(request: WorkspaceRequest, pk: int) -> HttpResponse:
    version = selectors.pack_version_get(workspace=request.workspace, pk=pk)
    response = HttpResponse(version.raw_yaml, content_type="application/yaml; charset=utf-8")
    disposition = "inline" if request.GET.get("inline") else "attachment"
    response["Content-Disposition"] = f'{disposition}; filename="{version.pack.slug}-v{version.number}.yaml"'
    return response


@workspace_view(role=Role.MEMBER)
@require_POST
def version_lifecycle(request: WorkspaceRequest, pk: int) -> HttpResponse:
    version = selectors.pack_version_get(workspace=request.workspace, pk=pk)
    form = PackVersionLifecycleForm(request.POST)
    if form.is_valid():
        try:
            services.pack_version_set_lifecycle(version=version, lifecycle_status=form.cleaned_data["lifecycle_status"], user=request.user)
            messages.success(request, f"Version {version.number} is now {version.get_lifecycle_status_display().lower()}.")
        except DomainError as error:
            messages.error(request, error.message)
    else:
        messages.error(request, "Choose a valid lifecycle status.")
    next_url = request.POST.get("next", "")
    safe = url_has_allowed_host_and_scheme(next_url, allowed_hosts={request.get_host()}, require_https=request.is_secure())
    if not safe or not next_url.startswith("/") or any(ord(char) < 32 for char in next_url):
        next_url = reverse("packs:version", args=[request.workspace.slug, version.pk])
    # A URL, never a view name: redirect("a") would try reverse("a") and fail with a 500.
    return HttpResponseRedirect(next_url)


@workspace_view(role=Role.MEMBER)
@require_POST
def pack_lifecycle(request: WorkspaceRequest, pk: int) -> HttpResponse:
    pack = selectors.pack_get(workspace=request.workspace, pk=pk)
    form = PackLifecycleForm(request.POST)
    if form.is_valid():
        try:
            services.pack_set_lifecycle(pack=pack, lifecycle_status=form.cleaned_data["lifecycle_status"], user=request.user)
            messages.success(request, f"{pack.name} is now {pack.get_lifecycle_status_display().lower()}.")
        except DomainError as error:
            messages.error(request, error.message)
    else:
        messages.error(request, "Choose a valid lifecycle status.")
    return redirect("packs:detail", workspace_slug=request.workspace.slug, pk=pack.pk)


def _editor(request: WorkspaceRequest, *, pack: Pack | None) -> HttpResponse:
    """GET shows the editor; POST action=validate checks (htmx partial), action=publish publishes."""
    initial_source = ""
    if pack is not None:
        latest = pack.versions.order_by("-number").only("raw_yaml").first()
        initial_source = latest.raw_yaml if latest else ""
    form = PackSourceForm(request.POST or None, request.FILES or None, initial={"yaml": initial_source})
    context: dict[str, Any] = {
        "form": form,
        "pack": pack,
        "errors": [],
        "warnings": [],
        "valid": False,
        "check": None,
        "source": initial_source,
    }
    if request.method == "POST":
        action = request.POST.get("action", "validate")
        if form.is_valid():
            source = form.cleaned_data["source"]
            context["source"] = source
            try:
                if action == "publish":
                    version = services.pack_publish(workspace=request.workspace, user=request.user, source=source, pack=pack)
                    count = len(version.warnings or [])
                    noted = f" with {count} warning{'s' if count != 1 else ''} (listed on this page)" if count else ""
                    messages.success(request, f"Published {version.pack.name} version {version.number}{noted}.")
                    return redirect("packs:version", workspace_slug=request.workspace.slug, pk=version.pk)
                check = services.pack_check(workspace=request.workspace, source=source, pack=pack)
                context.update({"valid": True, "check": check, "warnings": check.warnings})
            except services.PackInvalid as exc:
                context["errors"] = exc.errors
                context["warnings"] = exc.warnings
            except services.PackConflict as exc:
                context["errors"] = [exc.as_dict()]
        else:
            # Shown in the result region so an htmx Validate sees them too.
            context["source"] = request.POST.get("yaml", "")
            context["errors"] = [
                {"field": "", "message": message, "line": None} for messages in form.errors.values() for message in messages
            ]
    context["error_lines"] = sorted({e["line"] for e in context["errors"] if e.get("line")})
    context["warning_lines"] = sorted({w["line"] for w in context["warnings"] if w.get("line")} - set(context["error_lines"]))
    context["line_numbers"] = range(1, max(1, context["source"].count("\n") + 1) + 1)
    if request.htmx and request.method == "POST":
        return render(request, "packs/pack_editor.html#editor-result", context)
    return render(request, "packs/pack_editor.html", context, status=200)


@workspace_view(role=Role.MEMBER)
@require_http_methods(["GET", "POST"])
def pack_new(request: WorkspaceRequest) -> HttpResponse:
    return _editor(request, pack=None)


@workspace_view(role=Role.MEMBER)
@require_http_methods(["GET", "POST"])
def version_new(request: WorkspaceRequest, pk: int) -> HttpResponse:
    pack = object_get_for_workspace(Pack.objects.all(), workspace=request.workspace, pk=pk)
    return _editor(request, pack=pack)


@workspace_view()
@require_GET
def library(request: WorkspaceRequest) -> HttpResponse:
    entries = catalog.library_packs()
    added = {
        (v.pack.slug, v.number): v
        for v in PackVersion.objects.filter(workspace=request.workspace, pack__slug__in=[e.slug for e in entries])
        .select_related("pack")
        .only("pk", "number", "pack__slug", "pack__name")
    }
    rows = [{"entry": e, "added": added.get((e.slug, e.version_number))} for e in entries]
    return render(
        request,
        "packs/library.html",
        {"rows": rows, "license": catalog.library_license(), "can_write": can(request.membership, Role.MEMBER)},
    )


@workspace_view(role=Role.MEMBER)
@require_POST
def library_add(request: WorkspaceRequest, slug: str) -> HttpResponse:
    entry = catalog.library_pack_get(slug)
    if entry is None:
        messages.error(request, f"The library has no pack {slug!r}.")
        return redirect("packs:library", workspace_slug=request.workspace.slug)
    existing = selectors.pack_version_by_slug(workspace=request.workspace, slug=entry.slug, number=entry.version_number)
    if existing is not None:
        messages.info(request, f"{entry.name} version {entry.version_number} is already in this workspace.")
        return redirect("packs:version", workspace_slug=request.workspace.slug, pk=existing.pk)
    try:
        version = services.pack_publish(workspace=request.workspace, user=request.user, source=entry.source)
    except DomainError as error:
        messages.error(request, f"Could not add {entry.name}: {error.message}")
        return redirect("packs:library", workspace_slug=request.workspace.slug)
    messages.success(request, f"Added {entry.name} version {version.number} to this workspace.")
    return redirect("packs:version", workspace_slug=request.workspace.slug, pk=version.pk)

"""Regression pages: suites, a suite's cases with Activate/Archive, Promote from a case replay."""

from __future__ import annotations

from collections.abc import Callable

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.template.defaultfilters import pluralize
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_GET, require_POST
from django_htmx.http import HttpResponseStopPolling

from core.errors import DomainError
from core.forms import form_add_domain_error
from regression import selectors, services
from regression.forms import PromoteForm, SuiteCreateForm, SuiteEditForm
from regression.models import RegressionCase, RegressionSuite
from runs import lookups
from runs.models import CaseRun
from workspaces.access import WorkspaceRequest, can, workspace_view
from workspaces.models import Role

STATUS_ACTIONS = {RegressionCase.Status.ACTIVE: "Activate", RegressionCase.Status.ARCHIVED: "Archive"}


@workspace_view()
def suite_list(request: WorkspaceRequest) -> HttpResponse:
    can_edit = can(request.membership, Role.MEMBER)
    form = SuiteCreateForm(request.POST or None, workspace=request.workspace)
    if request.method == "POST":
        if not can_edit:
            raise PermissionDenied("This needs the member role in this workspace.")
        if form.is_valid():
            data = form.cleaned_data
            try:
                suite = services.regression_suite_create(
                    workspace=request.workspace, user=request.user, pack=data["pack"], name=data["name"], description=data["description"]
                )
            except DomainError as exc:
                form_add_domain_error(form, exc)
            else:
                messages.success(request, f"Suite “{suite.name}” created. Promote failed cases into it from a case's replay page.")
                return redirect("regression:suite", request.workspace.slug, suite.pk)
    context = {"suites": selectors.suite_list(workspace=request.workspace), "form": form, "can_edit": can_edit}
    return render(request, "regression/suite_list.html", context)


@workspace_view()
def suite_detail(request: WorkspaceRequest, suite_id: int) -> HttpResponse:
    suite = selectors.suite_get(workspace=request.workspace, pk=suite_id)
    status = request.GET.get("status", "")
    status = status if status in RegressionCase.Status.values else ""
    return _suite_page(request, suite, status=status)


def _suite_page(
    request: WorkspaceRequest, suite: RegressionSuite, *, status: str = "", edit_form: SuiteEditForm | None = None
) -> HttpResponse:
    can_edit = can(request.membership, Role.MEMBER)
    context = {
        "suite": suite, "cases": selectors.case_list(suite=suite, status=status), "status": status,
        "statuses": RegressionCase.Status.choices, "severities": RegressionCase.Severity.choices,
        "can_edit": can_edit, "actions": STATUS_ACTIONS,
        "edit_form": edit_form or SuiteEditForm(initial={"name": suite.name, "description": suite.description}),
        "can_delete": can(request.membership, Role.ADMIN), "in_use": services.suite_in_use(suite),
    }  # fmt: skip
    return render(request, "regression/suite_detail.html", context, status=400 if edit_form is not None else 200)


@require_POST
@workspace_view(Role.MEMBER)
def suite_edit(request: WorkspaceRequest, suite_id: int) -> HttpResponse:
    """Rename a suite or change its description."""
    suite = selectors.suite_get(workspace=request.workspace, pk=suite_id)
    form = SuiteEditForm(request.POST)
    if form.is_valid():
        try:
            services.regression_suite_update(
                suite=suite, user=request.user, name=form.cleaned_data["name"], description=form.cleaned_data["description"]
            )
        except DomainError as exc:
            form_add_domain_error(form, exc)
        else:
            messages.success(request, f"Suite saved as “{suite.name}”.")
            return redirect("regression:suite", request.workspace.slug, suite.pk)
    suite.refresh_from_db()
    return _suite_page(request, suite, edit_form=form)


@require_POST
@workspace_view(Role.MEMBER)
def suite_archive(request: WorkspaceRequest, suite_id: int) -> HttpResponse:
    """Archive (``archived=1``) or restore (``archived=0``) a suite."""
    suite = selectors.suite_get(workspace=request.workspace, pk=suite_id)
    archived = request.POST.get("archived", "1") not in ("0", "false", "")
    services.regression_suite_set_archived(suite=suite, user=request.user, archived=archived)
    if archived:
        messages.success(request, f"Suite “{suite.name}” archived: new runs no longer offer it; its cases and history stay.")
    else:
        messages.success(request, f"Suite “{suite.name}” restored.")
    return redirect("regression:suite", request.workspace.slug, suite.pk)


@require_POST
@workspace_view(Role.ADMIN)
def suite_delete(request: WorkspaceRequest, suite_id: int) -> HttpResponse:
    """Delete a suite no run has used (admins); one that was run must be archived instead."""
    suite = selectors.suite_get(workspace=request.workspace, pk=suite_id)
    name = suite.name
    try:
        services.regression_suite_delete(suite=suite, user=request.user)
    except DomainError as exc:
        messages.error(request, exc.message)
        return redirect("regression:suite", request.workspace.slug, suite.pk)
    messages.success(request, f"Suite “{name}” deleted.")
    return redirect("regression:suites", request.workspace.slug)


def _case_row(request: WorkspaceRequest, case: RegressionCase, error: str = "") -> HttpResponse:
    context = {"case": case, "suite": case.suite, "can_edit": True, "actions": STATUS_ACTIONS, "error": error}
    context["severities"] = RegressionCase.Severity.choices
    return render(request, "regression/suite_detail.html#regression-case", context)


def _case_change(
    request: WorkspaceRequest,
    regression_case_id: int,
    change: Callable[[RegressionCase], RegressionCase],
    success: Callable[[RegressionCase], str] | None = None,
) -> HttpResponse:
    """One service change to a case: its row again (htmx), else back to its suite with a message."""
    case = selectors.case_get(workspace=request.workspace, pk=regression_case_id)
    error = ""
    try:
        case = change(case)
    except DomainError as exc:
        error = exc.message
    if request.htmx:
        return _case_row(request, case, error)
    if error:
        messages.error(request, error)
    elif success is not None:
        messages.success(request, success(case))
    return redirect("regression:suite", request.workspace.slug, case.suite_id)


@require_POST
@workspace_view(Role.MEMBER)
def case_status(request: WorkspaceRequest, regression_case_id: int) -> HttpResponse:
    status = request.POST.get("status", "")
    return _case_change(
        request,
        regression_case_id,
        lambda case: services.regression_case_set_status(case=case, user=request.user, status=status),
        lambda case: f"“{case.title}” is now {case.get_status_display().lower()}.",
    )


@require_POST
@workspace_view(Role.MEMBER)
def case_severity(request: WorkspaceRequest, regression_case_id: int) -> HttpResponse:
    severity = request.POST.get("severity", "")
    return _case_change(
        request,
        regression_case_id,
        lambda case: services.regression_case_set_severity(case=case, user=request.user, severity=severity),
    )


def _back(request: WorkspaceRequest, fallback: str) -> HttpResponse:
    """Back to the page the promote came from (``next``, same site only), else ``fallback``."""
    target = request.POST.get("next") or ""
    if target and url_has_allowed_host_and_scheme(target, allowed_hosts={request.get_host()}, require_https=request.is_secure()):
        return redirect(target)
    return redirect(fallback)


@require_POST
@workspace_view(Role.MEMBER)
def case_promote(request: WorkspaceRequest, run_id: int, case_run_id: int) -> HttpResponse:
    """Promote one failed case. From htmx the form is replaced in place by where the case was kept
    (the reviewer stays on the failures page or the replay); without JavaScript, back to that page."""
    run = lookups.run_get(workspace=request.workspace, pk=run_id)
    case_run = lookups.case_run_get(run=run, pk=case_run_id)
    replay = reverse("runs:case_replay", args=[request.workspace.slug, run.pk, case_run.pk])
    form = PromoteForm(request.POST, workspace=request.workspace, pack_id=run.pack_version.pack_id)
    if not form.is_valid():
        error = "Choose a suite of this run's pack and a severity."
        if request.htmx:
            return render(request, "regression/_promote_error.html", {"error": error})  # htmx swaps 2xx only
        messages.error(request, error)
        return redirect(replay)
    data = form.cleaned_data
    try:
        case, created = services.regression_case_promote(
            workspace=request.workspace, user=request.user, case_run=case_run, suite=data["suite"], severity=data["severity"]
        )
    except DomainError as exc:
        if request.htmx:
            return render(request, "regression/_promote_error.html", {"error": exc.message})
        messages.error(request, exc.message)
        return redirect(replay)
    if request.htmx:
        return render(request, "regression/_promoted.html", {"case": case, "current_workspace": request.workspace})
    if created:
        messages.success(request, f"Promoted “{case.title}” as a proposed case of “{case.suite.name}”: activate it to run it.")
    else:
        messages.info(request, f"“{case.title}” already is a {case.status} case of “{case.suite.name}”.")
    return _back(request, reverse("regression:suite", args=[request.workspace.slug, case.suite_id]))


@require_POST
@workspace_view(Role.MEMBER)
def case_promote_batch(request: WorkspaceRequest, run_id: int) -> HttpResponse:
    """Promote the failed cases ticked on the failures review into one suite, then back to it."""
    run = lookups.run_get(workspace=request.workspace, pk=run_id)
    failures = reverse("regression:failures", args=[request.workspace.slug, run.pk])
    form = PromoteForm(request.POST, workspace=request.workspace, pack_id=run.pack_version.pack_id)
    ids = [int(v) for v in request.POST.getlist("case_run") if v.isdigit()]
    if not form.is_valid() or not ids:
        messages.error(request, "Tick the cases to promote and choose a suite of this run's pack.")
        return _back(request, failures)
    case_runs = list(CaseRun.objects.filter(run=run, pk__in=ids).order_by("position", "pk"))
    if len(case_runs) != len(set(ids)):
        raise Http404("No such case in this run")
    try:
        result = services.regression_cases_promote(
            workspace=request.workspace, user=request.user, case_runs=case_runs, suite=form.cleaned_data["suite"],
            severity=form.cleaned_data["severity"],
        )  # fmt: skip
    except DomainError as exc:
        messages.error(request, exc.message)
        return _back(request, failures)
    created = sum(1 for _, new in result if new)
    words = f"Promoted {created} case{pluralize(created)} into “{form.cleaned_data['suite'].name}” as proposed"
    kept = len(result) - created
    messages.success(request, words + (f"; {kept} already {'was' if kept == 1 else 'were'} there." if kept else "."))
    return _back(request, failures)


@require_GET
@workspace_view()
def run_coverage(request: WorkspaceRequest, run_id: int) -> HttpResponse:
    """The run page's coverage table, polled while the run runs; 286 (htmx stops polling) after
    the last version once the run is over and no case is still stopping (the run page's rule)."""
    run = lookups.run_get(workspace=request.workspace, pk=run_id)
    live = not run.is_terminal or bool(lookups.case_counts(run=run)["running"])
    context = {"coverage": selectors.run_regression_coverage(run=run), "run": run, "current_workspace": request.workspace, "live": live}
    context["polls"] = live
    response = render(request, "regression/_coverage.html", context)
    return response if live else HttpResponseStopPolling(response.content)

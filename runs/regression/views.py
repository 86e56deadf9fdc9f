"""Regression pages: suites, a suite's cases with Activate/Archive, Promote from a case replay."""

from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from runs import selectors as run_selectors
from runs.models import RegressionCase
from runs.regression import selectors, services
from runs.regression.errors import RegressionError
from runs.regression.forms import PromoteForm, SuiteCreateForm
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
            except RegressionError as exc:
                form.add_error(exc.field if exc.field in form.fields else None, exc.text)
            else:
                messages.success(request, f"Suite “{suite.name}” created. Promote failed cases into it from a case's replay page.")
                return redirect("regression:suite", request.workspace.slug, suite.pk)
    context = {"suites": selectors.suite_list(workspace=request.workspace), "form": form, "can_edit": can_edit}
    return render(request, "runs/regression/suite_list.html", context)


@workspace_view()
def suite_detail(request: WorkspaceRequest, suite_id: int) -> HttpResponse:
    suite = selectors.suite_get(workspace=request.workspace, pk=suite_id)
    status = request.GET.get("status", "")
    status = status if status in RegressionCase.Status.values else ""
    context = {
        "suite": suite, "cases": selectors.case_list(suite=suite, status=status), "status": status,
        "statuses": RegressionCase.Status.choices, "severities": RegressionCase.Severity.choices,
        "can_edit": can(request.membership, Role.MEMBER), "actions": STATUS_ACTIONS,
    }  # fmt: skip
    return render(request, "runs/regression/suite_detail.html", context)


def _case_row(request: WorkspaceRequest, case: RegressionCase, error: str = "") -> HttpResponse:
    context = {"case": case, "suite": case.suite, "can_edit": True, "actions": STATUS_ACTIONS, "error": error}
    context["severities"] = RegressionCase.Severity.choices
    return render(request, "runs/regression/suite_detail.html#regression-case", context)


@require_POST
@workspace_view(Role.MEMBER)
def case_status(request: WorkspaceRequest, regression_case_id: int) -> HttpResponse:
    case = selectors.case_get(workspace=request.workspace, pk=regression_case_id)
    error = ""
    try:
        case = services.regression_case_set_status(case=case, user=request.user, status=request.POST.get("status", ""))
    except RegressionError as exc:
        error = exc.text
    if request.htmx:
        return _case_row(request, case, error)
    if error:
        messages.error(request, error)
    else:
        messages.success(request, f"“{case.title}” is now {case.get_status_display().lower()}.")
    return redirect("regression:suite", request.workspace.slug, case.suite_id)


@require_POST
@workspace_view(Role.MEMBER)
def case_severity(request: WorkspaceRequest, regression_case_id: int) -> HttpResponse:
    case = selectors.case_get(workspace=request.workspace, pk=regression_case_id)
    error = ""
    try:
        case = services.regression_case_set_severity(case=case, user=request.user, severity=request.POST.get("severity", ""))
    except RegressionError as exc:
        error = exc.text
    if request.htmx:
        return _case_row(request, case, error)
    if error:
        messages.error(request, error)
    return redirect("regression:suite", request.workspace.slug, case.suite_id)


@require_POST
@workspace_view(Role.MEMBER)
def case_promote(request: WorkspaceRequest, run_id: int, case_run_id: int) -> HttpResponse:
    run = run_selectors.run_get(workspace=request.workspace, pk=run_id)
    case_run = run_selectors.case_run_get(run=run, pk=case_run_id)
    form = PromoteForm(request.POST, workspace=request.workspace, pack_id=run.pack_version.pack_id)
    if not form.is_valid():
        messages.error(request, "Choose a suite of this run's pack and a severity.")
        return redirect("runs:case_replay", request.workspace.slug, run.pk, case_run.pk)
    data = form.cleaned_data
    try:
        case, created = services.regression_case_promote(
            workspace=request.workspace, user=request.user, case_run=case_run, suite=data["suite"], severity=data["severity"]
        )
    except RegressionError as exc:
        messages.error(request, exc.text)
        return redirect("runs:case_replay", request.workspace.slug, run.pk, case_run.pk)
    if created:
        messages.success(request, f"Promoted “{case.title}” as a proposed case of “{case.suite.name}”: activate it to run it.")
    else:
        messages.info(request, f"“{case.title}” already is a {case.status} case of “{case.suite.name}”.")
    return redirect("regression:suite", request.workspace.slug, case.suite_id)

"""Compare and release-gate pages (docs/style.md §10: access helper → form → service → response)."""

from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from comparisons import presenters, selectors, services
from comparisons.forms import ComparisonForm, GateForm
from comparisons.models import Comparison
from core.errors import DomainError
from core.forms import form_add_domain_error
from engine.scoring.documents import ComparisonSummary
from runs.models import Lane, Run
from workspaces.access import WorkspaceRequest, can, object_get_for_workspace, workspace_view
from workspaces.models import Role, Workspace


@workspace_view()
@require_http_methods(["GET", "POST"])
def comparisons(request: WorkspaceRequest) -> HttpResponse:
    workspace = request.workspace
    if request.method == "POST":
        if not can(request.membership, Role.MEMBER):
            raise PermissionDenied("Comparing runs needs the member role.")
        form = ComparisonForm(request.POST, workspace=workspace)
        if form.is_valid():
            data = form.cleaned_data
            try:
                comparison, created = services.comparison_get_or_create(
                    workspace=workspace,
                    user=request.user,
                    baseline_run=data["baseline_run_id"],
                    candidate_run=data["candidate_run_id"],
                    baseline_lane=data["baseline_lane_id"],
                    candidate_lane=data["candidate_lane_id"],
                )
            except DomainError as exc:
                form_add_domain_error(form, exc)
            else:
                if not created:
                    messages.info(request, "This comparison already existed; here it is.")
                return redirect("comparisons:detail", workspace_slug=workspace.slug, comparison_id=comparison.pk)
    else:
        initial = {}
        baseline = request.GET.get("baseline")
        if baseline and baseline.isdigit() and Run.objects.filter(workspace=workspace, pk=baseline).exists():
            initial["baseline_run_id"] = int(baseline)
        form = ComparisonForm(initial=initial, workspace=workspace)
    listed = [(c, presenters.comparison_title(c)) for c in selectors.comparison_list(workspace=workspace)[:100]]
    context = {
        "form": form,
        "comparisons": listed,
        "baseline_lanes": _lanes_for(workspace, form["baseline_run_id"].value()),
        "candidate_lanes": _lanes_for(workspace, form["candidate_run_id"].value()),
        "can_compare": can(request.membership, Role.MEMBER),
    }
    return render(request, "comparisons/comparisons.html", context)


def _lanes_for(workspace: Workspace, run_id: object) -> list[Lane]:
    if not run_id or not str(run_id).isdigit():
        return []
    return list(Lane.objects.filter(workspace=workspace, run_id=int(str(run_id))).order_by("lane_index"))


@workspace_view()
@require_GET
def comparison_lanes(request: WorkspaceRequest) -> HttpResponse:
    """The lane picker for one side, swapped in by htmx when its run changes."""
    side = "candidate" if request.GET.get("side") == "candidate" else "baseline"
    run_id = request.GET.get(f"{side}_run_id") or request.GET.get("run")
    lanes = _lanes_for(request.workspace, run_id)
    return render(request, "comparisons/comparisons.html#lane-picker", {"side": side, "lanes": lanes, "selected": None})


def _comparison(request: WorkspaceRequest, comparison_id: int) -> Comparison:
    return object_get_for_workspace(
        Comparison.objects.select_related("baseline_run", "candidate_run", "baseline_lane", "candidate_lane"),
        workspace=request.workspace,
        pk=comparison_id,
    )


def _detail_context(request: WorkspaceRequest, comparison: Comparison, gate_form: GateForm) -> dict[str, object]:
    summary: ComparisonSummary | None = comparison.summary or None
    deltas = []
    for key, entry in ((summary.get("dimension_deltas") if summary else None) or {}).items():
        delta = entry.get("delta")
        outcome = (
            "same"
            if delta is not None and abs(delta) < 1e-9
            else "better"
            if (delta or 0) > 0
            else "worse"
            if delta is not None
            else entry.get("state")
        )
        deltas.append({"key": key, **entry, "outcome": outcome})
    diffs = presenters.case_diffs(comparison, workspace_slug=request.workspace.slug)
    gates = list(comparison.gate_results.select_related("created_by").all())
    return {
        "comparison": comparison,
        "summary": summary or {},
        "deltas": deltas,
        "metric_deltas": (summary.get("metric_deltas") if summary else None) or {},
        "title": presenters.comparison_title(comparison),
        "case_diffs": diffs,
        "worse_count": sum(1 for d in diffs if d.direction == "worse"),
        "gates": gates,
        "latest_gate": gates[0] if gates else None,
        "gate_form": gate_form,
        "can_evaluate": can(request.membership, Role.MEMBER),
    }


@workspace_view()
@require_GET
def comparison_detail(request: WorkspaceRequest, comparison_id: int) -> HttpResponse:
    comparison = _comparison(request, comparison_id)
    return render(request, "comparisons/comparison_detail.html", _detail_context(request, comparison, GateForm()))


@workspace_view(role=Role.MEMBER)
@require_POST
def comparison_gate(request: WorkspaceRequest, comparison_id: int) -> HttpResponse:
    comparison = _comparison(request, comparison_id)
    form = GateForm(request.POST)
    if form.is_valid():
        try:
            gate = services.gate_evaluate(comparison=comparison, user=request.user, policy_text=form.cleaned_data["policy"])
        except DomainError as exc:
            form_add_domain_error(form, exc)
        else:
            level = {"pass": messages.SUCCESS, "warn": messages.WARNING, "fail": messages.ERROR}.get(gate.verdict, messages.INFO)
            messages.add_message(request, level, f"Release gate: {gate.verdict.replace('_', ' ')} — {gate.summary}")
            return redirect("comparisons:detail", workspace_slug=request.workspace.slug, comparison_id=comparison.pk)
    return render(request, "comparisons/comparison_detail.html", _detail_context(request, comparison, form), status=400)


@workspace_view()
@require_GET
def gates(request: WorkspaceRequest) -> HttpResponse:
    return render(request, "comparisons/gates.html", {"gates": selectors.gate_list(workspace=request.workspace)[:200]})

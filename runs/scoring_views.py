"""Scorecard, compare and release-gate pages (STYLE.md §8: access helper → form → service → response)."""

from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from runs.comparisons import selectors, services
from runs.comparisons.forms import ComparisonForm, GateForm
from runs.comparisons.scorecards import lane_scorecard_markdown, lane_scorecard_view, run_scorecard_rows
from runs.models import Comparison, Run, RunAgent
from workspaces.access import can, object_get_for_workspace, workspace_view
from workspaces.models import Role

BAR_WIDTH = 64


def _bar(value: float | None, maximum: float | None = 1.0) -> int | None:
    if value is None or not maximum:
        return None
    return max(0, min(BAR_WIDTH, round(BAR_WIDTH * float(value) / float(maximum))))


def _run_scorecard_context(run: Run) -> dict:
    data = run_scorecard_rows(run)
    max_cost = max((r["cost_usd"] or 0 for r in data["lanes"]), default=0) or None
    max_latency = max((r["latency_p50_ms"] or 0 for r in data["lanes"]), default=0) or None
    for row in data["lanes"]:
        row["bars"] = {
            "overall": _bar(row["overall_score"]),
            "pass_rate": _bar(row["pass_rate"]),
            "cost": _bar(row["cost_usd"], max_cost),
            "latency": _bar(row["latency_p50_ms"], max_latency),
        }
        row["dimension_cells"] = [{"key": k, "value": row["dimensions"].get(k), "bar": _bar(row["dimensions"].get(k))}
                                  for k in data["dimension_keys"]]
    return {"run": run, "scorecard": data}


@workspace_view()
@require_GET
def run_scorecard(request: HttpRequest, run_pk: int) -> HttpResponse:
    """The run's ranking table; the run page loads it with htmx and it polls while pending."""
    run = object_get_for_workspace(Run.objects.all(), workspace=request.workspace, pk=run_pk)
    context = _run_scorecard_context(run)
    if request.htmx:
        # The swapped-in fragment only carries a polling trigger while scoring is pending.
        return render(request, "runs/scorecard_run.html#run-scorecard", context)
    return render(request, "runs/scorecard_run.html", context)


def _lane(request: HttpRequest, run_pk: int, lane_pk: int) -> RunAgent:
    run = object_get_for_workspace(Run.objects.all(), workspace=request.workspace, pk=run_pk)
    return object_get_for_workspace(RunAgent.objects.select_related("run"), workspace=request.workspace, pk=lane_pk, run=run)


@workspace_view()
@require_GET
def lane_scorecard(request: HttpRequest, run_pk: int, lane_pk: int) -> HttpResponse:
    lane = _lane(request, run_pk, lane_pk)
    view = lane_scorecard_view(lane, workspace_slug=request.workspace.slug, failures_only=request.GET.get("failures") == "1")
    view["markdown"] = lane_scorecard_markdown(view) if view["scorecard"] else ""
    view["run"] = lane.run
    return render(request, "runs/scorecard_lane.html", view)


@workspace_view()
@require_GET
def lane_scorecard_json(request: HttpRequest, run_pk: int, lane_pk: int) -> HttpResponse:
    lane = _lane(request, run_pk, lane_pk)
    view = lane_scorecard_view(lane, workspace_slug=request.workspace.slug)
    body = {
        "run_id": lane.run_id, "lane_id": lane.pk, "label": lane.label, "deployment": view["deployment"],
        "scorecard": view["document"] or None,
        "cases": [{k: v for k, v in c.items() if k != "case_run"} for c in view["cases"]],
    }
    response = JsonResponse(body, json_dumps_params={"indent": 2})
    response["Content-Disposition"] = f'attachment; filename="scorecard-run{lane.run_id}-lane{lane.pk}.json"'
    return response


# -- compare ------------------------------------------------------------------------------------


@workspace_view()
@require_http_methods(["GET", "POST"])
def comparisons(request: HttpRequest) -> HttpResponse:
    workspace = request.workspace
    if request.method == "POST":
        if not can(request.membership, Role.MEMBER):
            raise PermissionDenied("Comparing runs needs the member role.")
        form = ComparisonForm(request.POST, workspace=workspace)
        if form.is_valid():
            data = form.cleaned_data
            try:
                comparison, created = services.comparison_get_or_create(
                    workspace=workspace, user=request.user, baseline_run=data["baseline_run"],
                    candidate_run=data["candidate_run"], baseline_lane=data["baseline_lane"],
                    candidate_lane=data["candidate_lane"])
            except ValidationError as exc:
                for field, errors in exc.message_dict.items():
                    form.add_error(field.removesuffix("_id") if field != "non_field_errors" else None, errors)
            else:
                if not created:
                    messages.info(request, "This comparison already existed; here it is.")
                return redirect("scoring:comparison_detail", workspace_slug=workspace.slug, pk=comparison.pk)
    else:
        initial = {}
        baseline = request.GET.get("baseline")
        if baseline and baseline.isdigit() and Run.objects.filter(workspace=workspace, pk=baseline).exists():
            initial["baseline_run"] = int(baseline)
        form = ComparisonForm(initial=initial, workspace=workspace)
    context = {
        "form": form,
        "comparisons": selectors.comparison_list(workspace=workspace)[:100],
        "baseline_lanes": _lanes_for(workspace, form["baseline_run"].value()),
        "candidate_lanes": _lanes_for(workspace, form["candidate_run"].value()),
        "can_compare": can(request.membership, Role.MEMBER),
    }
    return render(request, "runs/comparisons.html", context)


def _lanes_for(workspace, run_id) -> list[RunAgent]:  # type: ignore[no-untyped-def]
    if not run_id or not str(run_id).isdigit():
        return []
    return list(RunAgent.objects.filter(workspace=workspace, run_id=int(run_id)).order_by("lane_index"))


@workspace_view()
@require_GET
def comparison_lanes(request: HttpRequest) -> HttpResponse:
    """The lane picker for one side, swapped in by htmx when its run changes."""
    side = "candidate" if request.GET.get("side") == "candidate" else "baseline"
    run_id = request.GET.get(f"{side}_run") or request.GET.get("run")
    lanes = _lanes_for(request.workspace, run_id)
    return render(request, "runs/comparisons.html#lane-picker", {"side": side, "lanes": lanes, "selected": None})


def _comparison(request: HttpRequest, pk: int) -> Comparison:
    return object_get_for_workspace(
        Comparison.objects.select_related("baseline_run", "candidate_run", "baseline_lane", "candidate_lane"),
        workspace=request.workspace, pk=pk)


def _detail_context(request: HttpRequest, comparison: Comparison, gate_form: GateForm) -> dict:
    summary = comparison.summary or {}
    deltas = []
    for key, entry in (summary.get("dimension_deltas") or {}).items():
        delta = entry.get("delta")
        outcome = "same" if delta is not None and abs(delta) < 1e-9 else "better" if (delta or 0) > 0 else "worse" if delta is not None else entry.get("state")
        deltas.append({"key": key, **entry, "outcome": outcome})
    divergence = summary.get("case_divergence") or {}
    case_ids = {}
    for lane in (comparison.baseline_lane, comparison.candidate_lane):
        case_ids[lane.pk] = dict(lane.case_runs.values_list("case_key", "pk"))
    slug = request.workspace.slug

    def links(case_key: str) -> dict:
        b = case_ids[comparison.baseline_lane_id].get(case_key)
        c = case_ids[comparison.candidate_lane_id].get(case_key)
        return {
            "case_key": case_key,
            "baseline_url": f"/w/{slug}/runs/{comparison.baseline_run_id}/cases/{b}/" if b else None,
            "candidate_url": f"/w/{slug}/runs/{comparison.candidate_run_id}/cases/{c}/" if c else None,
        }

    divergent = []
    for kind, label in (("passed_to_failed", "passed → failed"), ("failed_to_passed", "failed → passed"),
                        ("completed_to_failed", "completed → run failed"), ("failed_to_completed", "run failed → completed")):
        for case_key in divergence.get(kind) or []:
            divergent.append({**links(case_key), "kind": kind, "label": label})
    gates = list(comparison.gate_results.select_related("created_by").all())
    return {
        "comparison": comparison,
        "summary": summary,
        "deltas": deltas,
        "metric_deltas": summary.get("metric_deltas") or {},
        "divergent": divergent,
        "gates": gates,
        "latest_gate": gates[0] if gates else None,
        "gate_form": gate_form,
        "can_evaluate": can(request.membership, Role.MEMBER),
    }


@workspace_view()
@require_GET
def comparison_detail(request: HttpRequest, pk: int) -> HttpResponse:
    comparison = _comparison(request, pk)
    return render(request, "runs/comparison_detail.html", _detail_context(request, comparison, GateForm()))


@workspace_view(role=Role.MEMBER)
@require_POST
def comparison_gate(request: HttpRequest, pk: int) -> HttpResponse:
    comparison = _comparison(request, pk)
    form = GateForm(request.POST)
    if form.is_valid():
        try:
            gate = services.gate_evaluate(comparison=comparison, user=request.user, policy_text=form.cleaned_data["policy"])
        except ValidationError as exc:
            form.add_error("policy", exc.message_dict.get("policy") or exc.messages)
        else:
            level = {"pass": messages.SUCCESS, "warn": messages.WARNING, "fail": messages.ERROR}.get(gate.verdict, messages.INFO)
            messages.add_message(request, level, f"Release gate: {gate.verdict.replace('_', ' ')} — {gate.summary}")
            return redirect("scoring:comparison_detail", workspace_slug=request.workspace.slug, pk=comparison.pk)
    return render(request, "runs/comparison_detail.html", _detail_context(request, comparison, form), status=400)


@workspace_view()
@require_GET
def gates(request: HttpRequest) -> HttpResponse:
    return render(request, "runs/gates.html", {"gates": selectors.gate_list(workspace=request.workspace)[:200]})

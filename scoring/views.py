"""Scorecard pages: a run's ranking, a lane's scorecard and its JSON download."""

from __future__ import annotations

from django.http import HttpResponse, JsonResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from engine.scoring.security import DETECTORS
from packs.models import Pack
from runs.models import Lane, Run, ScoreStatus
from scoring.presenters import lane_scorecard_markdown, lane_scorecard_view, run_scorecard_rows
from scoring.selectors import lane_standings
from scoring.statistics import error_bar
from scoring.trends import pack_trends
from workspaces.access import WorkspaceRequest, object_get_for_workspace, workspace_view

BAR_WIDTH = 64


def _bar(value: float | None, maximum: float | None = 1.0) -> int | None:
    if value is None or not maximum:
        return None
    return max(0, min(BAR_WIDTH, round(BAR_WIDTH * float(value) / float(maximum))))


def _run_scorecard_context(run: Run) -> dict[str, object]:
    data = run_scorecard_rows(run)
    max_cost = max((r["cost_usd"] or 0 for r in data["lanes"]), default=0) or None
    max_latency = max((r["latency_p50_ms"] or 0 for r in data["lanes"]), default=0) or None
    for row in data["lanes"]:
        interval = error_bar(row["statistics"], "pass_rate")
        trials = row["statistics"]["trials"] if row["statistics"] else 0
        row["interval_short"] = (
            f"{interval['low'] * 100:.0f}–{interval['high'] * 100:.0f} % · {trials} trials" if interval else f"{trials} trial · no interval"
        )
        row["bars"] = {
            "overall": _bar(row["overall_score"]),
            "pass_rate": _bar(row["pass_rate"]),
            "pass_rate_low": _bar(interval["low"]) if interval else None,
            "pass_rate_high": _bar(interval["high"]) if interval else None,
            "cost": _bar(row["cost_usd"], max_cost),
            "latency": _bar(row["latency_p50_ms"], max_latency),
        }
        row["dimension_cells"] = [
            {"key": k, "value": row["dimensions"].get(k), "bar": _bar(row["dimensions"].get(k))} for k in data["dimension_keys"]
        ]
    detectors = list(DETECTORS) if any(row.get("security") for row in data["lanes"]) else []
    return {"run": run, "scorecard": data, "leak_detectors": detectors}


@workspace_view()
@require_GET
def run_scorecard(request: WorkspaceRequest, run_id: int) -> HttpResponse:
    """The run's ranking table; the run page loads it with htmx and it polls while pending."""
    run = object_get_for_workspace(Run.objects.all(), workspace=request.workspace, pk=run_id)
    context = _run_scorecard_context(run)
    if run.score_status in (ScoreStatus.PENDING, ScoreStatus.SKIPPED):  # standings so far, while there is no ranking
        context["standings"] = lane_standings(run=run)
    if request.htmx:
        # The swapped-in fragment only carries a polling trigger while scoring is pending.
        return render(request, "scoring/scorecard_run.html#run-scorecard", context)
    return render(request, "scoring/scorecard_run.html", context)


def _lane(request: WorkspaceRequest, run_id: int, lane_id: int) -> Lane:
    run = object_get_for_workspace(Run.objects.all(), workspace=request.workspace, pk=run_id)
    return object_get_for_workspace(Lane.objects.select_related("run"), workspace=request.workspace, pk=lane_id, run=run)


@workspace_view()
@require_GET
def lane_scorecard(request: WorkspaceRequest, run_id: int, lane_id: int) -> HttpResponse:
    lane = _lane(request, run_id, lane_id)
    view = lane_scorecard_view(lane, workspace_slug=request.workspace.slug, failures_only=request.GET.get("failures") == "1")
    view["markdown"] = lane_scorecard_markdown(view) if view["scorecard"] else ""
    view["run"] = lane.run
    return render(request, "scoring/scorecard_lane.html", view)


@workspace_view()
@require_GET
def lane_scorecard_json(request: WorkspaceRequest, run_id: int, lane_id: int) -> HttpResponse:
    lane = _lane(request, run_id, lane_id)
    view = lane_scorecard_view(lane, workspace_slug=request.workspace.slug)
    body = {
        "run_id": lane.run_id,
        "lane_id": lane.pk,
        "label": lane.label,
        "deployment": view["deployment"],
        "scorecard": view["document"] or None,
        "statistics": view["statistics"],
        "cases": [{k: v for k, v in c.items() if k != "case_run"} for c in view["cases"]],
    }
    response = JsonResponse(body, json_dumps_params={"indent": 2})
    response["Content-Disposition"] = f'attachment; filename="scorecard-run{lane.run_id}-lane{lane.pk}.json"'
    return response


@workspace_view()
@require_GET
def pack_results(request: WorkspaceRequest, pack_id: int) -> HttpResponse:
    """Pass rate and score per agent across the runs of a pack's versions (the pack page loads it)."""
    pack = object_get_for_workspace(Pack.objects.all(), workspace=request.workspace, pk=pack_id)
    context = {"pack": pack, "trends": pack_trends(workspace=request.workspace, pack=pack, workspace_slug=request.workspace.slug)}
    if request.htmx:
        return render(request, "scoring/pack_results.html#pack-results", context)
    return render(request, "scoring/pack_results.html", context)

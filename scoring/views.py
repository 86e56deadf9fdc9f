"""Scorecard pages: a run's ranking, a lane's scorecard and its JSON download."""

from __future__ import annotations

from django.http import HttpResponse, JsonResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from packs.models import Pack
from runs.models import Lane, Run
from scoring.presenters import lane_scorecard_markdown, lane_scorecard_view, run_scorecard_context
from scoring.trends import pack_trends
from workspaces.access import WorkspaceRequest, object_get_for_workspace, workspace_view

CASES_PER_PAGE = 100  # the lane scorecard lists this many cases, with a link to all of them


@workspace_view()
@require_GET
def run_scorecard(request: WorkspaceRequest, run_id: int) -> HttpResponse:
    """The run's ranking table; the run page loads it with htmx and it polls while pending."""
    run = object_get_for_workspace(Run.objects.all(), workspace=request.workspace, pk=run_id)
    context = run_scorecard_context(run)
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
    show_all = request.GET.get("all") == "1"
    view = lane_scorecard_view(
        lane,
        workspace_slug=request.workspace.slug,
        failures_only=request.GET.get("failures") == "1",
        limit=None if show_all else CASES_PER_PAGE,
    )
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

"""Run pages: list, new run, live run, case replay (STYLE.md §8–§11)."""

from __future__ import annotations

from django.contrib import messages
from django.core.paginator import Paginator
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.utils import timezone
from django.views.decorators.http import require_POST
from django_htmx.http import HttpResponseStopPolling

from packs.models import Pack
from runs import presenters, selectors, services
from runs.forms import RunCreateForm
from runs.models import CaseRun, RunEvent, RunStatus
from workspaces.access import WorkspaceRequest, can, workspace_view
from workspaces.models import Role

CASES_PER_PAGE = 50
EVENTS_PER_PAGE = 50


@workspace_view()
def run_list(request: WorkspaceRequest) -> HttpResponse:
    status = request.GET.get("status", "")
    pack = request.GET.get("pack", "")
    runs = selectors.run_list(workspace=request.workspace, status=status, pack_id=pack)
    page = Paginator(runs, 50).get_page(request.GET.get("page"))
    context = {
        "page": page, "runs": page.object_list, "status": status, "pack": pack,
        "statuses": RunStatus.choices, "packs": Pack.objects.filter(workspace=request.workspace).order_by("name"),
        "can_start": can(request.membership, Role.MEMBER),
    }  # fmt: skip
    template = "runs/run_list.html#run-table" if request.htmx else "runs/run_list.html"
    return render(request, template, context)


@workspace_view(Role.MEMBER)
def run_create(request: WorkspaceRequest) -> HttpResponse:
    if request.method == "POST":
        form = RunCreateForm(request.POST, workspace=request.workspace)
        if form.is_valid():
            data = form.cleaned_data
            try:
                simulator = data.get("simulator_deployment") if form.needs_simulator else None
                run = services.run_create(
                    workspace=request.workspace, user=request.user, pack_version=data["pack_version"],
                    deployment_ids=[d.pk for d in data["deployments"]],
                    input_set_id=data["input_set"].pk if data.get("input_set") else None, name=data.get("name") or "",
                    judge_deployments=form.judge_choices(), allow_missing_judges=bool(data.get("allow_missing_judges")),
                    simulator_deployment_id=simulator.pk if simulator else None,
                )  # fmt: skip
            except services.RunCreateError as exc:
                field = {
                    "pack_version_id": "pack_version", "input_set_id": "input_set", "deployment_ids": "deployments",
                    "judge_deployments": "allow_missing_judges", "simulator_deployment_id": "simulator_deployment",
                }.get(exc.field)  # fmt: skip
                form.add_error(field if field in form.fields else None, exc.text)
            else:
                messages.success(request, f"Run “{run.name}” started.")
                return redirect("runs:detail", request.workspace.slug, run.pk)
        show_errors = True
    elif request.htmx:  # a field changed: re-render the form with its dependent choices, no errors yet
        form = RunCreateForm(request.GET, workspace=request.workspace)
        show_errors = False
    else:
        initial = {"pack_version": request.GET.get("pack_version")} if request.GET.get("pack_version") else {}
        form = RunCreateForm(workspace=request.workspace, initial=initial)
        show_errors = False
    template = "runs/run_create.html#run-create-form" if request.htmx else "runs/run_create.html"
    return render(request, template, {"form": form, "show_errors": show_errors})


def _elapsed(run) -> str:
    start = run.started_at or run.created_at
    end = run.finished_at or timezone.now()
    exact = max(0.0, (end - start).total_seconds())
    if exact < 10:  # scripted runs finish in well under a second: "0s" would read as "never ran"
        return f"{exact:.1f}s"
    seconds = int(exact)
    return f"{seconds // 60}m {seconds % 60:02d}s" if seconds >= 60 else f"{seconds}s"


def _status_context(request: WorkspaceRequest, run) -> dict:
    lanes = selectors.lane_progress(run=run)
    failures = list(CaseRun.objects.filter(run=run, status="failed").select_related("lane").order_by("-finished_at")[:5])
    return {
        "run": run,
        "lanes": lanes,
        "elapsed": _elapsed(run),
        "failures": failures,
        "can_cancel": can(request.membership, Role.MEMBER) and not run.is_terminal,
        "counts": selectors.case_counts(run=run),
    }


@workspace_view()
def run_detail(request: WorkspaceRequest, run_id: int) -> HttpResponse:
    run = selectors.run_get(workspace=request.workspace, pk=run_id)
    partial = request.GET.get("partial") if request.htmx else None
    if partial == "run-status":
        response = render(request, "runs/run_detail.html#run-status", _status_context(request, run))
        if run.is_terminal:
            stop = HttpResponseStopPolling(response.content)
            stop["HX-Refresh"] = "true"  # one reload shows the final case table and scorecard
            return stop
        return response
    if partial == "ticker-poll":
        events = selectors.run_events_latest(run=run, after=request.GET.get("after"), limit=30)
        after = events[-1].pk if events else request.GET.get("after", 0)
        context = {"run": run, "events": presenters.ticker_lines(events), "after": after, "new_only": True}
        response = render(request, "runs/run_detail.html#ticker-poll", context)
        return HttpResponseStopPolling(response.content) if run.is_terminal else response
    events = selectors.run_events_latest(run=run, limit=30)
    cases = Paginator(selectors.case_run_list(run=run, lane_id=request.GET.get("lane")), CASES_PER_PAGE).get_page(request.GET.get("page"))
    context = _status_context(request, run)
    context.update(
        {
            "events": presenters.ticker_lines(events),
            "after": events[-1].pk if events else 0,
            "cases": cases,
            "lane_filter": request.GET.get("lane", ""),
            "lanes_all": list(run.lanes.order_by("lane_index")),
        }
    )
    if request.htmx and partial == "run-cases":
        return render(request, "runs/run_detail.html#run-cases", context)
    return render(request, "runs/run_detail.html", context)


@require_POST
@workspace_view(Role.MEMBER)
def run_cancel(request: WorkspaceRequest, run_id: int) -> HttpResponse:
    run = selectors.run_get(workspace=request.workspace, pk=run_id)
    try:
        services.run_cancel(run=run, user=request.user)
        messages.success(request, "Run cancelled. Cases in progress stop at their next step.")
    except services.RunNotCancellable as exc:
        messages.error(request, str(exc))
    return redirect("runs:detail", request.workspace.slug, run.pk)


@workspace_view()
def case_replay(request: WorkspaceRequest, run_id: int, case_run_id: int) -> HttpResponse:
    run = selectors.run_get(workspace=request.workspace, pk=run_id)
    case_run = selectors.case_run_get(run=run, pk=case_run_id)
    events = RunEvent.objects.filter(case_run=case_run).order_by("sequence_number")
    page_number: str | int | None = request.GET.get("page")
    wanted = request.GET.get("event")
    if wanted:
        position = events.filter(sequence_number__lt=events.filter(event_id=wanted).values("sequence_number")[:1]).count()
        page_number = position // EVENTS_PER_PAGE + 1
    page = Paginator(events, EVENTS_PER_PAGE).get_page(page_number)
    for event in page.object_list:
        if event.payload_ref:
            event.payload = services.payload_hydrate(event.payload)
    steps = [presenters.replay_step(e) for e in page.object_list]
    return render(request, "runs/case_replay.html", {"run": run, "case_run": case_run, "page": page, "steps": steps})

"""Reads for runs: lists, progress, events. Lookups by user-supplied id go through the access helper."""

from __future__ import annotations

import dataclasses
from typing import Any

from django.db.models import Count, Prefetch, Q, QuerySet, Sum
from django.http import Http404

from runs.models import CASE_TERMINAL, CaseRun, CaseStatus, Lane, Run, RunEvent
from runs.presenters import lane_activity
from runs.services.events import payload_hydrate
from workspaces.access import object_get_for_workspace
from workspaces.models import Workspace

CASE_STATUSES = [s.value for s in CaseStatus]


def _case_count_annotations(prefix: str = "") -> dict[str, Count]:
    field = f"{prefix}case_runs"
    counts = {f"cases_{s}": Count(field, filter=Q(**{f"{field}__status": s})) for s in CASE_STATUSES}
    counts["cases_total"] = Count(field)
    return counts


def run_list(*, workspace: Workspace, status: str = "", pack_id: Any = None) -> QuerySet[Run]:
    """Runs of the workspace, newest first, with case counts and lanes (a fixed number of queries)."""
    runs = Run.objects.filter(workspace=workspace).select_related("pack_version__pack")
    if status:
        runs = runs.filter(status=status)
    if pack_id not in (None, ""):
        try:
            runs = runs.filter(pack_version__pack_id=int(pack_id))
        except (TypeError, ValueError):
            runs = runs.none()
    return (
        runs.annotate(**_case_count_annotations())
        .order_by("-created_at", "-id")
        .prefetch_related(Prefetch("lanes", queryset=Lane.objects.order_by("lane_index")))
    )


def run_get(*, workspace: Workspace, pk: Any) -> Run:
    return object_get_for_workspace(Run.objects.select_related("pack_version__pack", "input_set", "created_by"), workspace=workspace, pk=pk)


def case_counts(*, run: Run) -> dict[str, int]:
    rows = dict(CaseRun.objects.filter(run=run).values_list("status").annotate(n=Count("pk")).values_list("status", "n"))
    counts = {s: rows.get(s, 0) for s in CASE_STATUSES}
    counts["total"] = sum(rows.values())
    return counts


@dataclasses.dataclass
class LaneProgress:
    lane: Lane
    total: int
    done: int
    completed: int
    failed: int
    running: int
    steps: int
    tool_calls: int
    tokens: int
    activity: str

    @property
    def percent(self) -> int:
        return int(100 * self.done / self.total) if self.total else 0


def lane_progress(*, run: Run) -> list[LaneProgress]:
    lanes = list(
        run.lanes.select_related("deployment")
        .order_by("lane_index")
        .annotate(
            total=Count("case_runs"),
            done=Count("case_runs", filter=Q(case_runs__status__in=list(CASE_TERMINAL))),
            completed=Count("case_runs", filter=Q(case_runs__status=CaseStatus.COMPLETED)),
            failed=Count("case_runs", filter=Q(case_runs__status=CaseStatus.FAILED)),
            running=Count("case_runs", filter=Q(case_runs__status=CaseStatus.RUNNING)),
            steps=Sum("case_runs__step_count"),
            tool_calls=Sum("case_runs__tool_call_count"),
            tokens=Sum("case_runs__total_tokens"),
        )
    )
    latest: dict[int, RunEvent] = {}
    for lane in lanes:
        event = RunEvent.objects.filter(lane=lane).order_by("-sequence_number").only("event_type", "payload").first()
        if event is not None:
            latest[lane.pk] = event
    return [
        LaneProgress(
            lane=lane,
            total=lane.total,
            done=lane.done,
            completed=lane.completed,
            failed=lane.failed,
            running=lane.running,
            steps=lane.steps or 0,
            tool_calls=lane.tool_calls or 0,
            tokens=lane.tokens or 0,
            activity=lane_activity(latest.get(lane.pk)) if not lane.is_terminal else lane.get_status_display().lower(),
        )
        for lane in lanes
    ]


def case_run_list(*, run: Run, lane_id: Any = None) -> QuerySet[CaseRun]:
    cases = CaseRun.objects.filter(run=run).select_related("lane").order_by("lane__lane_index", "position")
    if lane_id not in (None, ""):
        try:
            cases = cases.filter(lane_id=int(lane_id))
        except (TypeError, ValueError):
            cases = cases.none()
    return cases


def case_run_get(*, run: Run, pk: Any) -> CaseRun:
    """A case of this run (the run was already resolved through the access helper), or 404."""
    try:
        return CaseRun.objects.select_related("lane", "run").get(run=run, pk=int(pk))
    except (CaseRun.DoesNotExist, TypeError, ValueError):
        raise Http404("Case not found") from None


def run_events_after(*, run: Run, after: Any = None, limit: int = 100, case_run: CaseRun | None = None) -> list[RunEvent]:
    """Events of the run (or one case) with id greater than ``after``, oldest first, payloads hydrated."""
    events = RunEvent.objects.filter(run=run)
    if case_run is not None:
        events = events.filter(case_run=case_run)
    try:
        after_id = int(after) if after not in (None, "") else 0
    except (TypeError, ValueError):
        after_id = 0
    rows = list(events.filter(id__gt=after_id).select_related("lane").order_by("id")[: max(1, min(int(limit), 1000))])
    for row in rows:
        if row.payload_ref:
            row.payload = payload_hydrate(row.payload)
    return rows


def run_events_latest(*, run: Run, after: Any = None, limit: int = 15) -> list[RunEvent]:
    """The newest events (at most ``limit``) after ``after``, oldest first: the live ticker."""
    events = RunEvent.objects.filter(run=run).select_related("lane")
    try:
        if after not in (None, ""):
            events = events.filter(id__gt=int(after))
    except (TypeError, ValueError):
        pass
    rows = list(events.order_by("-id")[:limit])
    rows.reverse()
    return rows

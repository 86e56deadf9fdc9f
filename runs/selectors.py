"""Reads for runs: lists, progress, events. Lookups by user-supplied id go through the access helper."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, TypedDict, cast

from django.db import connection, transaction
from django.db.models import (
    Avg,
    Count,
    DurationField,
    ExpressionWrapper,
    F,
    FloatField,
    Max,
    OuterRef,
    Prefetch,
    Q,
    QuerySet,
    Subquery,
    Sum,
)
from django.db.models.functions import Cast, Coalesce, Now, NullIf, Substr

from engine import events as ev
from engine.scoring.documents import ValidatorDetail
from engine.scoring.pricing import price_usage
from engine.scoring.spec import ModelPrice, PricingConfig
from runs.events import payload_hydrate
from runs.lookups import CASE_STATUSES
from runs.models import CASE_TERMINAL, CaseRun, CaseStatus, Lane, Run, RunArtifact, RunEvent, ScoreStatus
from scoring.models import CaseScore, LaneScorecard, RunScorecard
from scoring.services import evaluation_spec_for, workspace_prices_for
from workspaces.models import Workspace


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


# The runs list's sortable columns: ?sort=<key> ascending, ?sort=-<key> descending.
RUN_SORTS: dict[str, str] = {
    "name": "name",
    "status": "status",
    "pack": "pack_version__pack__name",
    "winner": "winner_label",
    "best_score": "best_score",
    "pass_rate": "pass_rate",
    "duration": "duration",
    "created": "created_at",
}
RUN_SORT_DEFAULT = "-created"


def run_sort_key(raw: str | None) -> str:
    """``raw`` if it names a sortable column (with an optional ``-``), else the default."""
    raw = (raw or "").strip()
    return raw if raw.lstrip("-") in RUN_SORTS else RUN_SORT_DEFAULT


def run_list_table(*, workspace: Workspace, status: str = "", pack_id: Any = None, query: str = "", sort: str = "") -> QuerySet[Run]:
    """The runs page: ``run_list`` plus winner, best lane score, pass rate and duration, searchable and sortable.

    Pass rate counts the scored case runs of every lane; duration runs from start to finish (or
    to now while the run runs). Sorting puts runs without a value last either way.
    """
    runs = run_list(workspace=workspace, status=status, pack_id=pack_id)
    query = (query or "").strip()
    if query:
        runs = runs.filter(
            Q(name__icontains=query)
            | Q(pack_version__pack__name__icontains=query)
            | Q(pk__in=Lane.objects.filter(workspace=workspace, label__icontains=query).values("run_id"))
            | (Q(pk=int(query.lstrip("#"))) if query.lstrip("#").isdigit() else Q(pk__in=[]))
        )
    best = LaneScorecard.objects.filter(lane__run=OuterRef("pk")).values("lane__run").annotate(best=Max("overall_score")).values("best")
    winner = RunScorecard.objects.filter(run=OuterRef("pk")).values("winner_lane__label")[:1]
    runs = runs.annotate(
        best_score=Subquery(best[:1], output_field=FloatField()),
        winner_label=Subquery(winner),
        cases_passed=Count("case_runs", filter=Q(case_runs__passed=True)),
        cases_scored=Count("case_runs", filter=Q(case_runs__passed__isnull=False)),
        duration=ExpressionWrapper(Coalesce("finished_at", Now()) - F("started_at"), output_field=DurationField()),
    ).annotate(
        pass_rate=ExpressionWrapper(Cast("cases_passed", FloatField()) / NullIf("cases_scored", 0), output_field=FloatField()),
    )
    key = run_sort_key(sort)
    field = RUN_SORTS[key.lstrip("-")]
    order = F(field).desc(nulls_last=True) if key.startswith("-") else F(field).asc(nulls_last=True)
    return runs.order_by(order, "-id")


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
    latest_event: RunEvent | None  # the lane's newest event (runs.presenters.lanes_with_activity words it)
    passed: int = 0
    scored: int = 0
    score_mean: float | None = None
    waiting_on_provider: int = 0  # running cases waiting on their provider account's limit now
    activity: str = ""  # what the lane is doing, in words (set by the presenter)

    @property
    def percent(self) -> int:
        return int(100 * self.done / self.total) if self.total else 0

    @property
    def queued(self) -> int:
        return max(0, self.total - self.done - self.running)

    @property
    def cancelled(self) -> int:
        return max(0, self.done - self.completed - self.failed)

    @property
    def pass_rate(self) -> float | None:
        """Passed cases among the scored ones, so far."""
        return self.passed / self.scored if self.scored else None

    @property
    def bar(self) -> dict[str, str]:
        """The segments of the lane's progress bar on a 0–100 axis (SVG attributes: no style=)."""
        if not self.total:
            return {"ok": "0", "failed": "0", "failed_x": "0", "running": "0", "running_x": "0"}
        unit = 100 / self.total
        ok, failed, running = self.completed * unit, (self.done - self.completed) * unit, self.running * unit
        return {
            "ok": f"{ok:.2f}",
            "failed": f"{failed:.2f}",
            "failed_x": f"{ok:.2f}",
            "running": f"{running:.2f}",
            "running_x": f"{ok + failed:.2f}",
        }


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
            passed=Count("case_runs", filter=Q(case_runs__passed=True)),
            scored=Count("case_runs", filter=Q(case_runs__score_status=ScoreStatus.SCORED)),
            score_mean=Avg("case_runs__score", filter=Q(case_runs__score_status=ScoreStatus.SCORED)),
            steps=Sum("case_runs__step_count"),
            tool_calls=Sum("case_runs__tool_call_count"),
            tokens=Sum("case_runs__total_tokens"),
        )
    )
    waiting = _waiting_on_provider(run) if any(lane.running for lane in lanes) else {}
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
            latest_event=latest.get(lane.pk),
            passed=lane.passed,
            scored=lane.scored,
            score_mean=lane.score_mean,
            waiting_on_provider=waiting.get(lane.pk, 0),
        )
        for lane in lanes
    ]


def _waiting_on_provider(run: Run) -> dict[int, int]:
    """Lane id → its running cases whose latest provider-limit event says they are waiting."""
    throttle = (ev.PROVIDER_THROTTLE_WAITING, ev.PROVIDER_THROTTLED)
    last = RunEvent.objects.filter(case_run=OuterRef("pk"), attempt=OuterRef("attempt"), event_type__in=throttle)
    rows = (
        CaseRun.objects.filter(run=run, status=CaseStatus.RUNNING)
        .annotate(last_throttle=Subquery(last.order_by("-sequence_number").values("event_type")[:1]))
        .filter(last_throttle=ev.PROVIDER_THROTTLE_WAITING)
        .values("lane_id")
        .annotate(cases=Count("pk"))
        .order_by()
    )
    return {row["lane_id"]: row["cases"] for row in rows}


def case_run_list(*, run: Run, lane_id: Any = None) -> QuerySet[CaseRun]:
    cases = CaseRun.objects.filter(run=run).select_related("lane").order_by("lane__lane_index", "position")
    if lane_id not in (None, ""):
        try:
            cases = cases.filter(lane_id=int(lane_id))
        except (TypeError, ValueError):
            cases = cases.none()
    return cases


def run_events_horizon(*, run_id: int) -> int | None:
    """The highest event id below which every event of the run that will ever exist is already
    committed (None: no limit), so a reader that advances its cursor to the last id it read never
    skips an event that commits later (docs/runs.md "Reading events").

    An event's id is taken when it is inserted, before its transaction commits: two lanes
    committing concurrently can make a lower id visible after a higher one was read. Every event
    is inserted under its lane row's lock, taken before its id (runs/events.py ``LaneRow``). So on
    PostgreSQL the horizon is the id sequence's last value read first, then a ``FOR SHARE`` on the
    run's lane rows, which waits for every writer that took an id up to it to commit. SQLite
    commits one writer at a time, in id order: no horizon is needed there.
    """
    if connection.vendor != "postgresql":
        return None
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SELECT pg_sequence_last_value(pg_get_serial_sequence('runs_runevent', 'id')::regclass)")
        horizon = cursor.fetchone()[0]
        cursor.execute("SELECT 1 FROM runs_runagent WHERE run_id = %s FOR SHARE", [run_id])
        cursor.fetchall()
    return int(horizon or 0)


def run_events_after(*, run: Run, after: Any = None, limit: int = 100, case_run: CaseRun | None = None) -> list[RunEvent]:
    """Events of the run (or one case) with id greater than ``after``, oldest first, payloads hydrated;
    only up to the run's commit horizon (:func:`run_events_horizon`): none is ever skipped."""
    events = RunEvent.objects.filter(run=run)
    horizon = run_events_horizon(run_id=run.pk)
    if horizon is not None:
        events = events.filter(id__lte=horizon)
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
    """The newest events (at most ``limit``) after ``after``, oldest first: the live ticker (up to
    the run's commit horizon, like :func:`run_events_after`)."""
    events = RunEvent.objects.filter(run=run).select_related("lane")
    horizon = run_events_horizon(run_id=run.pk)
    if horizon is not None:
        events = events.filter(id__lte=horizon)
    try:
        if after not in (None, ""):
            events = events.filter(id__gt=int(after))
    except (TypeError, ValueError):
        pass
    rows = list(events.order_by("-id")[:limit])
    rows.reverse()
    return rows


# -- the results matrix --------------------------------------------------------------------------

MATRIX_FIELDS = ("pk", "lane_id", "case_key", "position", "status", "passed", "score", "score_status", "stop_reason", "attempt")


class CaseMatrixRow(TypedDict):
    """A case run's ``MATRIX_FIELDS``."""

    pk: int
    lane_id: int
    case_key: str
    position: int
    status: str
    passed: bool | None
    score: float | None
    score_status: str
    stop_reason: str
    attempt: int


def case_matrix_rows(*, run: Run) -> list[CaseMatrixRow]:
    """Every case run of the run as a small dict (no outputs), in case order: one cheap query."""
    rows = CaseRun.objects.filter(run=run).order_by("position", "case_key", "lane__lane_index").values(*MATRIX_FIELDS)
    return cast(list[CaseMatrixRow], list(rows))


def case_output_starts(*, case_run_ids: list[int], length: int = 160) -> dict[int, str | None]:
    """The first ``length`` characters of each case run's final output (None: no answer)."""
    rows = CaseRun.objects.filter(pk__in=case_run_ids).annotate(start=Substr("final_output", 1, length)).values_list("pk", "start")
    return dict(rows)


def validator_keys(*, run: Run) -> list[str]:
    """The keys of the evaluation spec's validators, in declaration order."""
    spec = evaluation_spec_for(run)
    return [str(v["key"]) for v in spec.get("validators") or [] if isinstance(v, dict) and v.get("key")]


def validator_verdicts(*, run: Run, key: str) -> dict[int, ValidatorDetail]:
    """Per scored case run, the verdict of validator ``key`` (``verdict``, ``state``, ``normalized_score``, ``reason``)."""
    found: dict[int, ValidatorDetail] = {}
    rows = CaseScore.objects.filter(lane__run=run).values_list("case_run_id", "document__validator_details")
    for case_run_id, details in rows:
        stored: list[ValidatorDetail] = details if isinstance(details, list) else []
        for detail in stored:
            if isinstance(detail, dict) and detail.get("key") == key:
                found[case_run_id] = detail
                break
    return found


# -- the case replay -----------------------------------------------------------------------------


@dataclasses.dataclass
class CaseNeighbours:
    previous: CaseRun | None
    next: CaseRun | None
    same_case: list[CaseRun]  # the same case in the run's other lanes, in lane order


def case_neighbours(*, case_run: CaseRun) -> CaseNeighbours:
    """The cases before and after this one in its lane, and the same case in the other lanes."""
    lane_cases = CaseRun.objects.filter(lane_id=case_run.lane_id).only("pk", "case_key", "position", "status")
    previous = lane_cases.filter(Q(position__lt=case_run.position) | Q(position=case_run.position, pk__lt=case_run.pk))
    following = lane_cases.filter(Q(position__gt=case_run.position) | Q(position=case_run.position, pk__gt=case_run.pk))
    same = (
        CaseRun.objects.filter(run_id=case_run.run_id, case_key=case_run.case_key)
        .exclude(pk=case_run.pk)
        .select_related("lane")
        .order_by("lane__lane_index")
    )
    return CaseNeighbours(
        previous=previous.order_by("-position", "-pk").first(), next=following.order_by("position", "pk").first(), same_case=list(same)
    )


def case_events(*, case_run: CaseRun, after_sequence: int = 0, limit: int = 2000) -> list[RunEvent]:
    """A case's events after ``after_sequence``, in order, payloads hydrated."""
    rows = list(RunEvent.objects.filter(case_run=case_run, sequence_number__gt=after_sequence).order_by("sequence_number")[:limit])
    for row in rows:
        if row.payload_ref:
            row.payload = payload_hydrate(row.payload)
    return rows


def case_events_before(*, case_run: CaseRun, sequence: int, limit: int = 60) -> list[RunEvent]:
    """Up to ``limit`` events just before ``sequence``, oldest first: where the steps, model and
    tool calls that end on a replay page started (for their durations)."""
    rows = list(RunEvent.objects.filter(case_run=case_run, sequence_number__lt=sequence).order_by("-sequence_number")[:limit])
    rows.reverse()
    for row in rows:
        if row.payload_ref:
            row.payload = payload_hydrate(row.payload)
    return rows


def model_call_inputs(*, case_run: CaseRun, upto: RunEvent) -> list[RunEvent]:
    """The model calls of ``upto``'s attempt up to and including it: together they hold its full input."""
    rows = list(
        RunEvent.objects.filter(
            case_run=case_run, attempt=upto.attempt, event_type=ev.MODEL_CALL_STARTED, sequence_number__lte=upto.sequence_number
        ).order_by("sequence_number")
    )
    for row in rows:
        if row.payload_ref:
            row.payload = payload_hydrate(row.payload)
    return rows


def model_call_pricer(*, case_run: CaseRun) -> Callable[[str, str, int, int], float | None]:
    """Prices one model call's tokens from the sources scoring uses (the pack's pricing rows,
    free for ``scripted``, the workspace's overrides, the price library)."""
    spec = evaluation_spec_for(case_run.run)
    pricing: PricingConfig | None = spec.get("pricing")
    if not isinstance(pricing, dict):
        pricing = {}
    spec_rows: list[ModelPrice] = [row for row in pricing.get("models") or [] if isinstance(row, dict)]
    workspace_rows: list[ModelPrice] | None = None

    def price(provider_key: str, model_id: str, input_tokens: int, output_tokens: int) -> float | None:
        nonlocal workspace_rows
        if workspace_rows is None:  # read once, and only when a call has tokens to price
            workspace_rows = workspace_prices_for(case_run)
        priced = price_usage(spec_rows, workspace_rows, provider_key or case_run.lane.provider_key, model_id, input_tokens, output_tokens)
        return priced.cost_usd if priced is not None else None

    return price


def run_attachments(*, run: Run) -> list[RunArtifact]:
    """Artifacts attached to the run, oldest first (run page and API)."""
    return list(
        RunArtifact.objects.filter(run=run)
        .select_related("artifact__workspace", "artifact__created_by", "attached_by")
        .order_by("attached_at", "id")
    )


def case_live_totals(*, case_run: CaseRun) -> dict[str, int] | None:
    """Steps, tool calls and tokens of a case that is still running, from its events so far (the
    case's own counters are written when it finishes). None once it is finished."""
    if case_run.is_terminal:
        return None
    events = RunEvent.objects.filter(case_run=case_run, attempt=case_run.attempt)
    totals = events.aggregate(
        steps=Count("pk", filter=Q(event_type=ev.SYSTEM_STEP_STARTED)),
        tool_calls=Count("pk", filter=Q(event_type__in=list(ev.TOOL_CALL_RESULTS)) & ~Q(payload__tool_name="submit")),
    )
    usage = events.filter(event_type=ev.MODEL_CALL_COMPLETED).values_list("payload__usage__input_tokens", "payload__usage__output_tokens")
    totals["input_tokens"] = sum(int(i or 0) for i, _ in usage)
    totals["output_tokens"] = sum(int(o or 0) for _, o in usage)
    return totals

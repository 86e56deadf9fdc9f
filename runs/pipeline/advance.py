"""After the case: refill its lane, score it, move its lane and its run forward (spec runtime.md §4.2).

The lane writer's dispatch side lives here: which of a lane's queued cases go to the broker next
(:func:`lane_dispatch`, the one way into dispatch). Every dispatch reads the lane's state with the
statement that locks its row (runs/events.py ``LaneRow``), then picks as many undispatched cases as
the lane's in-flight limit leaves free, in one statement. Then, the case finished, its score (when
it was not scored with its finish), the lane's move to ``evaluating`` and its scorecard, and the
run's (:func:`case_after_finish`, :func:`lane_advance`, :func:`run_advance`).

Every step is safe to repeat: transitions are compare-and-set and scoring is idempotent.
"""

from __future__ import annotations

import collections
import dataclasses
import heapq
import logging
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Count, Q
from django.utils import timezone

from engine.scoring.security import SecurityPolicy
from engine.scoring.spec import EvaluationSpec
from runs.adapters.statements import prepared_cursor
from runs.events import DEFAULT_MAX_IN_FLIGHT, LaneRow, LaneState
from runs.jobs import CaseRunExecute, CaseRunFinalize, RunRoundAdvance
from runs.lifecycle import lane_transition, run_transition
from runs.models import LANE_TERMINAL, CaseRun, CaseStatus, Lane, LaneStatus, RepeatsMode, Run, RunStatus, ScoreStatus
from runs.queue import enqueue_on_commit
from scoring import services as scoring

logger = logging.getLogger(__name__)


# -- the lane's next cases ---------------------------------------------------------------------


def lanes_dispatch_interleaved(*, lane_ids: list[int]) -> int:
    """Fill a starting run's lanes: the first lane's dispatch shares the workspace's free slots
    among all its waiting lanes, least-served first (A1 B1 A2 B2 …), the others find theirs taken.

    The broker hands tasks out first in, first out. Enqueued lane by lane (A1…A8 B1…B8), the
    workers' slots all went to lane A and lane B showed "0 of 8" until A was nearly done.
    Interleaved, L lanes share N slots about N/L each from the start; every later dispatch
    gives its free slots to the least-served lane again (:func:`lane_dispatch`).
    """
    return sum(lane_dispatch(lane_id).count for lane_id in lane_ids)


# The dispatcher's questions about one lane are served by partial indexes (runs.models.CaseRun.Meta:
# ``caserun_in_flight``, ``caserun_to_dispatch``) instead of reading every queued case of the lane
# (1.5 ms and 0.8 ms at 5,000 queued). The states are literals, not parameters, so the planner can
# prove that the query matches the index's predicate.
# (SQLite matches a partial index's WHERE by its shape: the terms are in the index's order.)
_IN_FLIGHT_SQL = (
    f"SELECT COUNT(*) FROM runs_caserun WHERE lane_id = %s AND (status = '{CaseStatus.RUNNING.value}' "
    f"OR (dispatched_at IS NOT NULL AND status = '{CaseStatus.QUEUED.value}'))"
)
_LANE_LIMIT = {
    "postgresql": "l.snapshot -> 'runtime_profile' ->> 'max_in_flight_cases'",
    "sqlite": "json_extract(l.snapshot, '$.runtime_profile.max_in_flight_cases')",
}
# Every executing lane of the workspace's running runs (the run's partial index ``run_running_ws``):
# its in-flight limit, its in-flight count and how many undispatched cases it has (counted up to
# %s: no lane can take more at once). Parameters: the ceiling, the workspace.
_WORKSPACE_LANES_SQL = (
    "SELECT l.id, {limit}, "
    f"(SELECT COUNT(*) FROM runs_caserun WHERE lane_id = l.id AND (status = '{CaseStatus.RUNNING.value}' "
    f"OR (dispatched_at IS NOT NULL AND status = '{CaseStatus.QUEUED.value}'))), "
    "(SELECT COUNT(*) FROM (SELECT 1 FROM runs_caserun WHERE lane_id = l.id AND dispatched_at IS NULL "
    f"AND status = '{CaseStatus.QUEUED.value}' LIMIT %s) AS waiting) "
    f"FROM runs_run r JOIN runs_runagent l ON l.run_id = r.id WHERE r.workspace_id = %s AND r.status = '{RunStatus.RUNNING.value}' "
    f"AND l.status = '{LaneStatus.EXECUTING.value}' ORDER BY l.id"
)
# Mark the lane's next ``n`` undispatched cases dispatched. Parameters: now, lane, n.
_PICK_SQL = (
    "UPDATE runs_caserun SET dispatched_at = %s WHERE id IN (SELECT id FROM runs_caserun WHERE lane_id = %s "
    f"AND dispatched_at IS NULL AND status = '{CaseStatus.QUEUED.value}' ORDER BY position, id LIMIT %s{{skip_locked}}) "
    "RETURNING id, position"
)
_WORKSPACE_LOCK_CLASS = 27_001  # pg_advisory_xact_lock(class, workspace): one dispatcher per workspace at a time


def case_priority(in_flight: int) -> int:
    """The broker priority of a workspace's next case, given how many it has in flight: 0 for its
    first two, 3 up to 8, 6 up to 32, then 9 (lower goes first; ``runs/queue.py``). A workspace
    starting its first case overtakes the waiting cases of a busy one (docs/operations.md)."""
    if in_flight < 2:
        return 0
    if in_flight < 8:
        return 3
    return 6 if in_flight < 32 else 9


@dataclasses.dataclass(frozen=True, slots=True)
class Dispatched:
    """What one dispatch did: the cases it sent for the lane, and whether the lane may have no open
    case left (nothing was picked and nothing is in flight: the lane may be done)."""

    count: int
    maybe_done: bool


@dataclasses.dataclass(slots=True)
class _WaitingLane:
    lane_id: int
    limit: int
    in_flight: int
    waiting: int


def lane_dispatch(lane_id: int, *, state: LaneState | None = None, locked: bool = False) -> Dispatched:
    """Dispatch the workspace's free slots, starting from lane ``lane_id`` (whose case finished, or
    which starts): the one way into dispatch.

    Fair scheduling (docs/operations.md "Fair scheduling"): a lane has at most its
    ``max_in_flight_cases`` (never above ``RUNS_MAX_IN_FLIGHT_CEILING``) cases dispatched and
    unfinished; the workspace at most ``RUNS_WORKSPACE_MAX_IN_FLIGHT`` across its running runs.
    The free slots go one at a time to the workspace's lane with the fewest in flight that has
    cases waiting (this lane first on a tie), so a run started behind a big one in the same
    workspace gets its share at the next finish, and every case is published at the priority of
    its workspace's load (:func:`case_priority`). Dispatchers of one workspace take its lock in
    turn (PostgreSQL: an advisory transaction lock; SQLite serialises every write anyway), after
    their lane's lock, so the counts they read hold until they commit.

    ``locked``: the caller's transaction holds the lane row's lock and read ``state`` with it (a
    case's finish, whose last events locked the row: runs/pipeline/execute.py); otherwise the row
    is locked and read here, in a transaction of its own.
    """
    if locked:
        return _dispatch_locked(lane_id, state)
    with transaction.atomic():
        return _dispatch_locked(lane_id, LaneRow(lane_id).state())


def workspace_dispatch(*, workspace_id: int) -> int:
    """Share the workspace's free slots again after some were freed without a case's finish (a run
    cancelled, a lane failed fast): through one of its executing lanes, whose dispatch serves them
    all. Returns how many cases that lane's own share was."""
    lane_id = (
        Lane.objects.filter(workspace_id=workspace_id, status=LaneStatus.EXECUTING, run__status=RunStatus.RUNNING)
        .order_by("pk")
        .values_list("pk", flat=True)
        .first()
    )
    return 0 if lane_id is None else lane_dispatch(lane_id).count


def _dispatch_locked(lane_id: int, state: LaneState | None) -> Dispatched:
    if state is None:
        return Dispatched(0, True)
    if state.run_status != RunStatus.RUNNING or state.lane_status != LaneStatus.EXECUTING:
        # This lane takes no more cases (its run ended, or it did): the slot its case freed goes to
        # the workspace's other lanes (none of its own is picked: the query reads executing lanes only).
        if not state.workspace_id:
            return Dispatched(0, True)
    ceiling = max(1, settings.RUNS_MAX_IN_FLIGHT_CEILING)
    with prepared_cursor() as cursor:  # prepared when the connection allows it (runs/adapters/statements.py)
        if connection.vendor == "postgresql":
            cursor.execute("SELECT pg_advisory_xact_lock(%s, %s)", [_WORKSPACE_LOCK_CLASS, state.workspace_id])
        lanes = _workspace_lanes(cursor, state, lane_id, ceiling)
        own = next((lane for lane in lanes if lane.lane_id == lane_id), None)
        in_flight = sum(lane.in_flight for lane in lanes)
        order = _share(lanes, lane_id, _free_slots(in_flight))
        now = connection.ops.adapt_datetimefield_value(timezone.now())
        skip_locked = " FOR UPDATE SKIP LOCKED" if connection.vendor == "postgresql" else ""
        picks: dict[int, list[int]] = {}
        for other_id, count in collections.Counter(order).items():
            cursor.execute(_PICK_SQL.format(skip_locked=skip_locked), [now, other_id, count])
            picks[other_id] = [row[0] for row in sorted(cursor.fetchall(), key=lambda r: (r[1], r[0]))]
    sent: collections.Counter[int] = collections.Counter()
    for other_id in order:  # round-robin, in the order the slots were shared
        ids = picks.get(other_id)
        if ids:
            enqueue_on_commit(CaseRunExecute(case_run_id=ids.pop(0)), priority=case_priority(in_flight + sent.total()))
            sent[other_id] += 1
    own_count = sent[lane_id]
    maybe_done = own_count == 0 and (own is None or own.in_flight == 0)
    return Dispatched(own_count, maybe_done)


def _workspace_lanes(cursor: Any, state: LaneState, lane_id: int, ceiling: int) -> list[_WaitingLane]:
    expression = _LANE_LIMIT.get(connection.vendor)
    if expression is None:  # another database: this lane alone
        cursor.execute(_IN_FLIGHT_SQL, [lane_id])
        waiting = CaseRun.objects.filter(lane_id=lane_id, status=CaseStatus.QUEUED, dispatched_at__isnull=True)[:ceiling].count()
        return [_WaitingLane(lane_id, min(state.max_in_flight, ceiling), int(cursor.fetchone()[0]), waiting)]
    cursor.execute(_WORKSPACE_LANES_SQL.format(limit=expression), [ceiling, state.workspace_id])
    lanes = []
    for other_id, limit, in_flight, waiting in cursor.fetchall():
        try:
            limit = int(limit or DEFAULT_MAX_IN_FLIGHT)
        except (TypeError, ValueError):
            limit = DEFAULT_MAX_IN_FLIGHT
        lanes.append(_WaitingLane(other_id, min(max(1, limit), ceiling), int(in_flight), int(waiting)))
    return lanes


def _free_slots(in_flight: int) -> int:
    cap = settings.RUNS_WORKSPACE_MAX_IN_FLIGHT
    return max(0, cap - in_flight) if cap else 1 << 30


def _share(lanes: list[_WaitingLane], lane_id: int, free: int) -> list[int]:
    """Hand ``free`` slots out one at a time to the lane with the fewest in flight (``lane_id``
    first on a tie, then the oldest lane) among those with a case waiting and room under their limit."""
    heap = [(lane.in_flight, lane.lane_id != lane_id, lane.lane_id, lane) for lane in lanes if lane.waiting and lane.in_flight < lane.limit]
    heapq.heapify(heap)
    order: list[int] = []
    while heap and len(order) < free:
        load, not_own, other_id, lane = heapq.heappop(heap)
        order.append(other_id)
        lane.waiting -= 1
        if lane.waiting and load + 1 < lane.limit:
            heapq.heappush(heap, (load + 1, not_own, other_id, lane))
    return order


# -- after the case's finish ------------------------------------------------------------------


def lane_fail_fast(*, lane_id: int, reason: str) -> int:
    """A lane whose deployment cannot work (its provider cannot be built from its configuration,
    its credential is missing): its cases not started yet fail now with ``reason`` instead of each
    being run (and retried) to fail the same way; the lane, and the run if no lane is left, then
    end as failed (docs/runs.md "Fail fast"). Their messages already sent are no-ops (no queued
    case to claim). Returns how many cases it failed."""
    with transaction.atomic():
        LaneRow(lane_id).lock()  # no dispatch of this lane meanwhile
        failed = CaseRun.objects.filter(lane_id=lane_id, status=CaseStatus.QUEUED).update(
            status=CaseStatus.FAILED,
            stop_reason="provider_error",
            error=f"not run: an earlier case of this lane showed its deployment cannot work: {reason}"[:5000],
            finished_at=timezone.now(),
            score_status=ScoreStatus.SKIPPED,
        )
    if failed:
        logger.warning("lane %s: %s queued cases failed fast (%s)", lane_id, failed, reason)
    lane_advance(lane_id=lane_id)
    workspace_id = Lane.objects.filter(pk=lane_id).values_list("workspace_id", flat=True).first()
    if workspace_id:
        workspace_dispatch(workspace_id=workspace_id)  # the slots its dispatched cases held
    return failed


@dataclasses.dataclass(frozen=True)
class ScoreHere:
    """Score a finished case in this process, after its finish: its row as the claim loaded it, its
    events as its sink kept them (None: read them), and the pack's spec and security policy from its context."""

    case_run: CaseRun
    events: list[dict[str, Any]] | None
    spec: EvaluationSpec
    security: SecurityPolicy | None


def case_after_finish(
    *,
    case_run_id: int,
    lane_id: int,
    status: str,
    maybe_done: bool | None = None,
    scored: bool = False,
    score_here: ScoreHere | None = None,
) -> None:
    """A case reached a terminal state (committed): score it unless it was, maybe finish its lane.

    ``scored``: the case's score was saved with its finish (runs/pipeline/execute.py); ``score_here``
    scores it in this process; otherwise ``runs.case_run_finalize`` is enqueued. ``maybe_done``: what
    the dispatcher that refilled the lane in the finish's transaction saw (None: dispatch here). The
    lane-completion check runs only when that dispatcher saw no open case left in the lane (it
    counts under the lane lock after this case's finish, so of the lane's last cases at least the
    one that dispatches last sees them all finished); after a score, a lane still executing is
    left to that case.
    """
    score = status != CaseStatus.CANCELLED
    if score and score_here is None and not scored:
        enqueue_on_commit(CaseRunFinalize(case_run_id=case_run_id))
    if maybe_done is None:
        maybe_done = lane_dispatch(lane_id).maybe_done  # first, so the next case is on its way while this one is scored
    if score and score_here is not None:
        _score(case_run_id, case_run=score_here.case_run, events=score_here.events, spec=score_here.spec, security=score_here.security)
        lane_advance(lane_id=lane_id, scored=not maybe_done)
    elif maybe_done:
        # Also for a case scored with its finish (``scored``): its score committed with the finish,
        # so whichever dispatcher later sees the lane empty also sees this score; no re-check here.
        lane_advance(lane_id=lane_id)


def _score(case_run_id: int, **kwargs: Any) -> None:
    try:
        scored = scoring.case_run_score(case_run_id=case_run_id, **kwargs)
    except Exception:
        logger.exception("scoring case run %s failed", case_run_id)
        scored = False
    if not scored:
        CaseRun.objects.filter(pk=case_run_id, score_status=ScoreStatus.PENDING).update(score_status=ScoreStatus.ERRORED)


def case_run_finalize(*, case_run_id: int) -> None:
    """Score one finished case (idempotent), then let its lane move on."""
    case_run = (
        CaseRun.objects.select_related("run__pack_version", "run__workspace", "lane", "case")
        .defer("run__pack_version__manifest")
        .filter(pk=case_run_id)
        .first()
    )
    if case_run is None:
        return
    _score(case_run_id, case_run=case_run)
    lane_advance(lane_id=case_run.lane_id, scored=True)


def lane_advance(*, lane_id: int, scored: bool = False) -> None:
    """``executing → evaluating`` once every case is finished; ``→ completed|failed`` once scored.

    ``scored``: called after a case score came in. A lane still executing is then left alone:
    the case that finishes the lane's execution does the ``executing → evaluating`` step and
    counts the scores itself (it either sees this score, or this call sees ``evaluating``).
    """
    lane = Lane.objects.filter(pk=lane_id).values("status", "run_id", "run__status", "run__repeats_mode").first()
    if lane is None or lane["run__status"] not in (RunStatus.RUNNING, RunStatus.SCORING) or lane["status"] in LANE_TERMINAL:
        return
    if scored and lane["status"] == LaneStatus.EXECUTING:
        return
    counts = lane_counts(lane_id)
    if counts["open"]:
        return
    if lane["status"] == LaneStatus.EXECUTING:
        lane_transition(
            lane_id=lane_id,
            to=LaneStatus.EVALUATING,
            expected=LaneStatus.EXECUTING,
            reason=f"{counts['total']} cases finished ({counts['completed']} completed); scoring pending",
        )
        # Count again after the move: a score that came in meanwhile saw ``executing`` and left
        # the lane to us (see ``scored`` above).
        counts = lane_counts(lane_id)
    elif lane["status"] != LaneStatus.EVALUATING:
        return
    if counts["unscored"]:
        return  # the last case_run_finalize calls back here
    if lane["run__repeats_mode"] == RepeatsMode.AUTO:
        # An adaptive run: the round decides whether this lane gets another trial of every case
        # or finishes (runs/pipeline/rounds.py); the last lane to finish its round sees them all.
        enqueue_on_commit(RunRoundAdvance(run_id=lane["run_id"]))
        return
    lane_complete(lane_id=lane_id, run_id=lane["run_id"], counts=counts)


def lane_complete(*, lane_id: int, run_id: int, counts: dict[str, int] | None = None) -> None:
    """An evaluating lane whose cases are all finished and scored: its scorecard, then ``completed``
    (or ``failed`` when no case completed), then maybe its run."""
    counts = counts or lane_counts(lane_id)
    try:
        scoring.lane_score(lane_id=lane_id)
    except Exception:
        logger.exception("lane scorecard for lane %s failed", lane_id)
    if counts["completed"]:
        lane_transition(
            lane_id=lane_id,
            to=LaneStatus.COMPLETED,
            expected=LaneStatus.EVALUATING,
            reason=f"{counts['completed']} of {counts['total']} cases completed",
        )
    else:
        lane_transition(
            lane_id=lane_id, to=LaneStatus.FAILED, expected=LaneStatus.EVALUATING, reason=f"no case completed (0 of {counts['total']})"
        )
    run_advance(run_id=run_id)


def lane_counts(lane_id: int) -> dict[str, int]:
    """The lane's case runs: ``open`` (queued or running), ``completed``, ``total`` and ``unscored``."""
    return CaseRun.objects.filter(lane_id=lane_id).aggregate(
        open=Count("pk", filter=Q(status__in=[CaseStatus.QUEUED, CaseStatus.RUNNING])),
        completed=Count("pk", filter=Q(status=CaseStatus.COMPLETED)),
        total=Count("pk"),
        unscored=Count("pk", filter=Q(score_status=ScoreStatus.PENDING, status__in=[CaseStatus.COMPLETED, CaseStatus.FAILED])),
    )


def run_advance(*, run_id: int) -> None:
    """``running → scoring → completed`` once every lane is finished (``failed`` if every lane failed)."""
    status = Run.objects.filter(pk=run_id).values_list("status", flat=True).first()
    if status not in (RunStatus.RUNNING, RunStatus.SCORING):
        return
    lanes = dict(Lane.objects.filter(run_id=run_id).values_list("status").annotate(n=Count("pk")).values_list("status", "n"))
    if any(s not in LANE_TERMINAL for s in lanes):
        return
    failed, completed = lanes.get(LaneStatus.FAILED, 0), lanes.get(LaneStatus.COMPLETED, 0)
    if status == RunStatus.RUNNING:
        if not completed:
            run_transition(run_id=run_id, to=RunStatus.FAILED, expected=RunStatus.RUNNING, reason=f"every lane failed ({failed})")
            return
        if not run_transition(run_id=run_id, to=RunStatus.SCORING, expected=RunStatus.RUNNING, reason="every lane finished"):
            return
    try:
        scoring.run_score(run_id=run_id)
    except Exception as exc:
        logger.exception("run scorecard for run %s failed", run_id)
        run_transition(run_id=run_id, to=RunStatus.FAILED, expected=RunStatus.SCORING, reason=f"run scorecard failed: {exc}"[:500])
        return
    scored = CaseRun.objects.filter(run_id=run_id, score_status=ScoreStatus.SCORED).count()
    errored = CaseRun.objects.filter(run_id=run_id, score_status=ScoreStatus.ERRORED).count()
    run_transition(
        run_id=run_id,
        to=RunStatus.COMPLETED,
        expected=RunStatus.SCORING,
        reason=f"{completed} lanes completed, {failed} failed; {scored} cases scored, {errored} errored",
    )

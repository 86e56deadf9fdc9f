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

import dataclasses
import itertools
import logging
from typing import Any

from django.db import connection, transaction
from django.db.models import Count, Q
from django.utils import timezone

from engine.scoring.security import SecurityPolicy
from engine.scoring.spec import EvaluationSpec
from runs.adapters.statements import prepared_cursor
from runs.events import LaneRow, LaneState
from runs.jobs import CaseRunExecute, CaseRunFinalize, RunRoundAdvance
from runs.lifecycle import lane_transition, run_transition
from runs.models import LANE_TERMINAL, CaseRun, CaseStatus, Lane, LaneStatus, RepeatsMode, Run, RunStatus, ScoreStatus
from runs.queue import enqueue_on_commit
from scoring import services as scoring

logger = logging.getLogger(__name__)


# -- the lane's next cases ---------------------------------------------------------------------


def lanes_dispatch_interleaved(*, lane_ids: list[int]) -> int:
    """Fill every lane's in-flight slots and enqueue the cases round-robin: A1 B1 A2 B2 …

    The broker hands tasks out first in, first out. Enqueued lane by lane (A1…A8 B1…B8), the
    workers' slots all went to lane A and lane B showed "0 of 8" until A was nearly done.
    Interleaved, L lanes share N slots about N/L each from the start; a finishing case refills
    its own lane at the back of the queue, so the interleaving holds for the rest of the run.
    """
    picked: list[list[int]] = []
    for lane_id in lane_ids:
        ids: list[int] = []
        lane_dispatch(lane_id, picked=ids)  # each lane's pick is committed before anything is sent
        picked.append(ids)
    order = [case_run_id for round_ in itertools.zip_longest(*picked) for case_run_id in round_ if case_run_id is not None]
    for case_run_id in order:
        enqueue_on_commit(CaseRunExecute(case_run_id=case_run_id))
    return len(order)


# Both statements are served by a partial index (runs.models.CaseRun.Meta: ``caserun_in_flight``,
# ``caserun_to_dispatch``) instead of reading every queued case of the lane (1.5 ms and 0.8 ms
# at 5,000 queued). The states are literals, not parameters, so the planner can prove that the
# query matches the index's predicate.
# (SQLite matches a partial index's WHERE by its shape: the terms are in the index's order.)
_IN_FLIGHT_SQL = (
    f"SELECT COUNT(*) FROM runs_caserun WHERE lane_id = %s AND (status = '{CaseStatus.RUNNING.value}' "
    f"OR (dispatched_at IS NOT NULL AND status = '{CaseStatus.QUEUED.value}'))"
)
# Pick and mark as many as the lane's limit leaves free, in one statement: the free count is a
# subquery (the in-flight count above) in the LIMIT. Parameters: now, lane, limit, lane.
_PICK_SQL = (
    "UPDATE runs_caserun SET dispatched_at = %s WHERE id IN (SELECT id FROM runs_caserun WHERE lane_id = %s "
    f"AND dispatched_at IS NULL AND status = '{CaseStatus.QUEUED.value}' ORDER BY position, id "
    f"LIMIT {{greatest}}(%s - ({_IN_FLIGHT_SQL}), 0)) RETURNING id, position"
)
_GREATEST = {"sqlite": "MAX"}  # a negative LIMIT is an error on PostgreSQL and no limit on SQLite


@dataclasses.dataclass(frozen=True, slots=True)
class Dispatched:
    """What one dispatch did: the cases it sent, and whether the lane may have no open case left
    (nothing was picked and nothing is in flight: the lane may be done)."""

    count: int
    maybe_done: bool


def lane_dispatch(lane_id: int, *, state: LaneState | None = None, locked: bool = False, picked: list[int] | None = None) -> Dispatched:
    """Enqueue the lane's next queued cases until ``max_in_flight_cases`` are dispatched and unfinished.

    The one way into dispatch. ``locked``: the caller's transaction holds the lane row's lock and
    read ``state`` with it (a case's finish, whose last events locked the row: runs/pipeline/execute.py);
    otherwise the row is locked and read here, in a transaction of its own. ``picked``, when given,
    receives the ids of the cases marked dispatched instead of having them enqueued here (the
    caller enqueues them, see :func:`lanes_dispatch_interleaved`).
    """
    if locked:
        return _dispatch_locked(lane_id, state, picked)
    with transaction.atomic():
        return _dispatch_locked(lane_id, LaneRow(lane_id).state(), picked)


def _dispatch_locked(lane_id: int, state: LaneState | None, picked: list[int] | None) -> Dispatched:
    if state is None or state.run_status != RunStatus.RUNNING or state.lane_status != LaneStatus.EXECUTING:
        return Dispatched(0, True)
    with prepared_cursor() as cursor:  # prepared when the connection allows it (runs/adapters/statements.py)
        now = connection.ops.adapt_datetimefield_value(timezone.now())
        cursor.execute(
            _PICK_SQL.format(greatest=_GREATEST.get(connection.vendor, "GREATEST")), [now, lane_id, state.max_in_flight, lane_id]
        )
        rows = sorted(cursor.fetchall(), key=lambda r: (r[1], r[0]))
        if rows:
            maybe_done = False
        else:  # none picked: the lane is full, or has none left to dispatch (then maybe done)
            cursor.execute(_IN_FLIGHT_SQL, [lane_id])
            maybe_done = int(cursor.fetchone()[0]) == 0
    for case_run_id, _ in rows:
        if picked is not None:
            picked.append(case_run_id)
        else:
            enqueue_on_commit(CaseRunExecute(case_run_id=case_run_id))
    return Dispatched(len(rows), maybe_done)


# -- after the case's finish ------------------------------------------------------------------


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

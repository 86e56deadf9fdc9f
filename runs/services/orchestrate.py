"""Moving a run forward: start, bounded case fan-out, lane and run completion, cancel, reaper.

Every step is safe to repeat: transitions are compare-and-set, dispatch counts what is already
in flight, and scoring services are idempotent. A task that runs twice changes nothing the
second time.
"""

from __future__ import annotations

import datetime as dt
import itertools
import logging
from typing import Any

from django.db import connection, transaction
from django.db.models import Count, Q
from django.utils import timezone

from runs.jobs import CaseRunExecute, CaseRunFinalize
from runs.lifecycle import InvalidTransition, case_finish, cases_cancel_open, lane_transition, run_transition
from runs.models import (
    LANE_TERMINAL,
    RUN_TERMINAL,
    CaseRun,
    CaseStatus,
    Lane,
    LaneStatus,
    Run,
    RunStatus,
    ScoreStatus,
)
from runs.precompiled import prepared_cursor
from runs.queue import enqueue_now, enqueue_on_commit
from scoring import services as scoring

logger = logging.getLogger(__name__)

ORPHAN_AFTER = dt.timedelta(minutes=15)
STALE_AFTER = dt.timedelta(seconds=60)
LOST_DISPATCH_AFTER = dt.timedelta(minutes=10)
MAX_ATTEMPTS = 3  # attempts per case, worker deaths included (execute.py retries up to it too)


class RunNotCancellable(Exception):
    pass


def run_start(*, run_id: int) -> bool:
    """``queued → provisioning → running``, lanes ``queued → ready → executing``, then fan out."""
    try:
        if not run_transition(run_id=run_id, to=RunStatus.PROVISIONING, expected=RunStatus.QUEUED, reason="worker picked up the run"):
            logger.info("run %s: not queued anymore, start skipped", run_id)
            return False
        lane_ids = list(Lane.objects.filter(run_id=run_id).values_list("pk", flat=True))
        if not lane_ids:
            run_transition(run_id=run_id, to=RunStatus.FAILED, reason="run has no lanes")
            return False
        for lane_id in lane_ids:
            lane_transition(lane_id=lane_id, to=LaneStatus.READY, expected=LaneStatus.QUEUED, reason="execution lane prepared")
        if not run_transition(run_id=run_id, to=RunStatus.RUNNING, expected=RunStatus.PROVISIONING, reason="lanes ready"):
            return False  # cancelled while provisioning
        for lane_id in lane_ids:
            lane_transition(lane_id=lane_id, to=LaneStatus.EXECUTING, expected=LaneStatus.READY, reason="executing cases")
        lanes_dispatch_interleaved(lane_ids=lane_ids)
    except InvalidTransition:
        raise
    except Exception as exc:
        logger.exception("starting run %s failed", run_id)
        run_transition(run_id=run_id, to=RunStatus.FAILED, reason=f"could not start: {type(exc).__name__}: {exc}"[:500])
        return False
    return True


def lane_dispatch_next(*, lane_id: int) -> int:
    """Enqueue queued cases until the lane has ``max_in_flight_cases`` dispatched and unfinished."""
    return _lane_dispatch(lane_id)[0]


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
        _lane_dispatch(lane_id, picked=ids)  # each lane's pick is committed before anything is sent
        picked.append(ids)
    order = [case_run_id for round_ in itertools.zip_longest(*picked) for case_run_id in round_ if case_run_id is not None]
    for case_run_id in order:
        enqueue_on_commit(CaseRunExecute(case_run_id=case_run_id))
    return len(order)


_LIMIT_SQL = {
    "postgresql": "snapshot -> 'runtime_profile' ->> 'max_in_flight_cases'",
    "sqlite": "json_extract(snapshot, '$.runtime_profile.max_in_flight_cases')",
}


def lane_state_columns() -> str:
    """SQL columns of the lane row (``runs_runagent``) giving what dispatch needs: lane status,
    run status and (on PostgreSQL and SQLite) the in-flight limit. Read with the statement that
    locks the row: :func:`_lane_lock_state`, or the finish's sequence reservation
    (runs/pipeline/execute.py ``_record``)."""
    limit = _LIMIT_SQL.get(connection.vendor)
    return "status, (SELECT status FROM runs_run WHERE runs_run.id = runs_runagent.run_id)" + (f", {limit}" if limit else "")


def _lane_lock_state(lane_id: int) -> tuple[str, str, int] | None:
    """Lock the lane row and return (lane status, run status, in-flight limit).

    PostgreSQL: ``SELECT … FOR UPDATE`` (a no-op write would leave a dead row version behind on
    the lane's hot row for every case). Elsewhere a no-op write, see ``lane_lock``.
    """
    columns = lane_state_columns()
    if connection.vendor == "postgresql":
        sql = f"SELECT {columns} FROM runs_runagent WHERE id = %s FOR UPDATE OF runs_runagent"
    else:
        sql = f"UPDATE runs_runagent SET next_sequence = next_sequence WHERE id = %s RETURNING {columns}"
    with connection.cursor() as cursor:
        cursor.execute(sql, [lane_id])
        row = cursor.fetchone()
    return None if row is None else _lane_state(lane_id, tuple(row))


def _lane_state(lane_id: int, row: tuple[Any, ...]) -> tuple[str, str, int]:
    """(lane status, run status, in-flight limit) from the values of :func:`lane_state_columns`."""
    if len(row) < 3:  # another database: read the snapshot
        lane = Lane.objects.only("snapshot").filter(pk=lane_id).first()
        value = lane.runtime_profile_snapshot.get("max_in_flight_cases") if lane else None
    else:
        value = row[2]
    try:
        return row[0], row[1], int(value or 8)
    except (TypeError, ValueError):
        return row[0], row[1], 8


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


@transaction.atomic
def _lane_dispatch(lane_id: int, picked: list[int] | None = None) -> tuple[int, bool]:
    """(cases dispatched, whether the lane may have no open case left).

    ``picked``, when given, receives the ids of the cases marked dispatched instead of having
    them enqueued here (the caller enqueues them, see :func:`lanes_dispatch_interleaved`).
    """
    state = _lane_lock_state(lane_id)  # one dispatcher per lane at a time, or two could both fill the free slots
    return lane_dispatch_locked(lane_id, state, picked=picked)


def lane_dispatch_locked(lane_id: int, state: tuple[str, str, int] | None, picked: list[int] | None = None) -> tuple[int, bool]:
    """:func:`_lane_dispatch` in the caller's transaction, which holds the lane row's lock
    (``state``: what :func:`_lane_lock_state` read, None when the lane is gone)."""
    if state is None or state[1] != RunStatus.RUNNING or state[0] != LaneStatus.EXECUTING:
        return 0, True
    with prepared_cursor() as cursor:  # prepared when the connection allows it (runs/precompiled.py)
        now = connection.ops.adapt_datetimefield_value(timezone.now())
        cursor.execute(_PICK_SQL.format(greatest=_GREATEST.get(connection.vendor, "GREATEST")), [now, lane_id, state[2], lane_id])
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
    return len(rows), maybe_done


def lane_refill(lane_id: int, lane_row: tuple[Any, ...] | None) -> bool:
    """Dispatch the lane's next cases in the caller's transaction, which finished a case of it;
    returns whether the lane may have no open case left (``maybe_done`` of :func:`case_after_finish`).

    ``lane_row``: the values of :func:`lane_state_columns`, read by the statement of this
    transaction that locked the lane row (the finish's sequence reservation), or None to lock
    and read it here.
    """
    state = _lane_state(lane_id, lane_row) if lane_row is not None else _lane_lock_state(lane_id)
    return lane_dispatch_locked(lane_id, state)[1]


def case_after_finish(
    *,
    case_run_id: int,
    lane_id: int,
    run_id: int,
    status: str,
    scored_here: CaseRun | None = None,
    events: list[dict[str, Any]] | None = None,
    scored: bool = False,
    maybe_done: bool | None = None,
) -> None:
    """A case reached a terminal state: refill the lane, score the case, maybe finish the lane.

    ``scored_here`` (the finished case, loaded as the claim loads it) scores the case in this
    process, with ``events`` (its events as stored, or None to read them) as evidence; ``scored``:
    the case's score was saved with its finish (runs/pipeline/execute.py); otherwise
    ``runs.case_run_finalize`` is enqueued. The lane-completion check runs only when the
    dispatcher saw no open case left in the lane (it counts under the lane lock after this case's
    finish was committed, so of the lane's last cases at least the one that dispatches last sees
    them all finished); after a score, a lane still executing is left to that case.
    ``maybe_done``: the lane was dispatched already, in the transaction that finished the case
    (:func:`lane_dispatch_locked`), and this is what its dispatcher saw.
    """
    score = status != CaseStatus.CANCELLED
    if score and scored_here is None and not scored:
        enqueue_on_commit(CaseRunFinalize(case_run_id=case_run_id))
    if maybe_done is None:
        _, maybe_done = _lane_dispatch(lane_id)  # first, so the next case is on its way while this one is scored
    if score and scored_here is not None:
        _score(case_run_id, case_run=scored_here, events=events)
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
    lane = Lane.objects.filter(pk=lane_id).values("status", "run_id", "run__status").first()
    if lane is None or lane["run__status"] not in (RunStatus.RUNNING, RunStatus.SCORING) or lane["status"] in LANE_TERMINAL:
        return
    if scored and lane["status"] == LaneStatus.EXECUTING:
        return
    counts = _lane_counts(lane_id)
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
        counts = _lane_counts(lane_id)
    elif lane["status"] != LaneStatus.EVALUATING:
        return
    if counts["unscored"]:
        return  # the last case_run_finalize calls back here
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
    run_advance(run_id=lane["run_id"])


def _lane_counts(lane_id: int) -> dict[str, int]:
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


@transaction.atomic
def run_cancel(*, run: Run, user: Any) -> Run:
    """Cancel a run that can still be cancelled; running cases stop at their next cancel check."""
    if run.is_terminal or not run_transition(run_id=run.pk, to=RunStatus.CANCELLED, reason="cancelled by user", user=user):
        raise RunNotCancellable(f"This run is {Run.objects.get(pk=run.pk).get_status_display().lower()} and can't be cancelled.")
    cases_cancel_open(run_id=run.pk)
    run.refresh_from_db()
    return run


def run_reap(
    *,
    now: dt.datetime | None = None,
    orphan_after: dt.timedelta = ORPHAN_AFTER,
    stale_after: dt.timedelta = STALE_AFTER,
    lost_after: dt.timedelta = LOST_DISPATCH_AFTER,
) -> dict[str, int]:
    """The periodic safety net: fail orphaned runs, re-queue abandoned cases, unstick lanes."""
    now = now or timezone.now()
    report = {"orphaned": 0, "requeued": 0, "abandoned": 0, "redispatched": 0, "rescored": 0, "advanced": 0, "closed": 0}
    orphans = Run.objects.filter(status__in=[RunStatus.QUEUED, RunStatus.PROVISIONING], created_at__lt=now - orphan_after)
    for run_id, status in orphans.values_list("pk", "status")[:500]:
        if run_transition(run_id=run_id, to=RunStatus.FAILED, expected=status, reason="orphaned run reaper: not started within 15 minutes"):
            cases_cancel_open(run_id=run_id)
            report["orphaned"] += 1
    running = Run.objects.filter(status=RunStatus.RUNNING)
    stale = CaseRun.objects.filter(run__in=running, status=CaseStatus.RUNNING).filter(
        Q(heartbeat_at__lt=now - stale_after) | Q(heartbeat_at__isnull=True)
    )
    for case_run_id, attempt, lane_id, run_id in stale.values_list("pk", "attempt", "lane_id", "run_id")[:500]:
        if attempt >= MAX_ATTEMPTS:  # its workers keep dying (a case that kills them): stop here
            error = f"the worker running this case stopped responding ({attempt} attempts)"
            fields = {"stop_reason": "sandbox_error", "error": error}
            with transaction.atomic():
                if case_finish(case_run_id=case_run_id, attempt=attempt, status=CaseStatus.FAILED, fields=fields):
                    case_after_finish(case_run_id=case_run_id, lane_id=lane_id, run_id=run_id, status=CaseStatus.FAILED)
                    report["abandoned"] += 1
            continue
        enqueue_now(CaseRunExecute(case_run_id=case_run_id, stale_seconds=stale_after.total_seconds()))
        report["requeued"] += 1
    # A case still running in a run that ended (cancelled, failed) whose worker died: nobody will
    # finish it, and the run page would show it running for ever.
    ended = CaseRun.objects.filter(run__status__in=list(RUN_TERMINAL), status=CaseStatus.RUNNING).filter(
        Q(heartbeat_at__lt=now - stale_after) | Q(heartbeat_at__isnull=True)
    )
    for case_run_id, attempt in ended.values_list("pk", "attempt")[:500]:
        fields = {"stop_reason": "cancelled", "error": "the run ended while this case ran, and its worker stopped responding"}
        if case_finish(case_run_id=case_run_id, attempt=attempt, status=CaseStatus.CANCELLED, fields=fields):
            report["closed"] += 1
    lost = CaseRun.objects.filter(run__in=running, status=CaseStatus.QUEUED, dispatched_at__lt=now - lost_after)
    for case_run_id in lost.values_list("pk", flat=True)[:500]:
        CaseRun.objects.filter(pk=case_run_id).update(dispatched_at=now)
        enqueue_now(CaseRunExecute(case_run_id=case_run_id))
        report["redispatched"] += 1
    # finished but never scored (its worker died between finishing and scoring it)
    unscored = CaseRun.objects.filter(
        run__in=running,
        status__in=[CaseStatus.COMPLETED, CaseStatus.FAILED],
        score_status=ScoreStatus.PENDING,
        finished_at__lt=now - stale_after,
    )
    for case_run_id in unscored.values_list("pk", flat=True)[:500]:
        enqueue_now(CaseRunFinalize(case_run_id=case_run_id))
        report["rescored"] += 1
    for lane_id in Lane.objects.filter(run__status=RunStatus.RUNNING, status__in=[LaneStatus.EXECUTING, LaneStatus.EVALUATING]).values_list(
        "pk", flat=True
    ):
        lane_dispatch_next(lane_id=lane_id)
        lane_advance(lane_id=lane_id)
        report["advanced"] += 1
    for run_id in Run.objects.filter(status=RunStatus.SCORING, updated_at__lt=now - stale_after).values_list("pk", flat=True):
        run_advance(run_id=run_id)
    return report

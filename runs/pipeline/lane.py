"""The lane writer's dispatch side: which of a lane's queued cases go to the broker next.

One dispatcher per lane at a time: every dispatch reads the lane's state with the statement that
locks its row (runs/events.py LaneRow), then picks as many undispatched cases as the lane's in-flight limit
leaves free, in one statement.
"""

from __future__ import annotations

import dataclasses
import itertools

from django.db import connection, transaction
from django.utils import timezone

from runs.adapters.statements import prepared_cursor
from runs.events import LaneRow, LaneState
from runs.jobs import CaseRunExecute
from runs.models import CaseStatus, LaneStatus, RunStatus
from runs.queue import enqueue_on_commit


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
    read ``state`` with it (a case's finish, whose last events locked the row: runs/pipeline/finish.py);
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

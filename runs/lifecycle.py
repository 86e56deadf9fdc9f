"""State changes of runs, lanes and case runs (spec runtime.md §4.2).

Every change is a compare-and-set ``UPDATE … WHERE status = <expected>`` plus a history row in the
same transaction. ``run_transition``/``lane_transition`` return False when another process moved
the row first (a lost race) and raise :class:`InvalidTransition` for a move the table forbids.
"""

from __future__ import annotations

import logging
from typing import Any

from django.db import transaction
from django.db.models import F
from django.utils import timezone

from core.actors import actor_or_none
from runs.adapters.statements import PrecompiledGet, RowUpdate
from runs.models import (
    LANE_TERMINAL,
    LANE_TRANSITIONS,
    RUN_TERMINAL,
    RUN_TRANSITIONS,
    CaseRun,
    CaseStatus,
    Lane,
    LaneStatus,
    LaneStatusHistory,
    Run,
    RunStatus,
    RunStatusHistory,
    ScoreStatus,
)

logger = logging.getLogger(__name__)


class InvalidTransition(Exception):
    """The transition table does not allow this move (never retried)."""


def _run_timestamps(to: str, now: Any) -> dict[str, Any]:
    fields: dict[str, Any] = {}
    if to == RunStatus.QUEUED:
        fields["queued_at"] = now
    elif to == RunStatus.PROVISIONING:
        fields["started_at"] = now
    if to in RUN_TERMINAL:
        fields["finished_at"] = now
    if to == RunStatus.CANCELLED:
        fields["cancelled_at"] = now
    elif to == RunStatus.FAILED:
        fields["failed_at"] = now
    return fields


def run_transition(*, run_id: int, to: str, reason: str = "", user: Any = None, expected: str | None = None) -> bool:
    """Move run ``run_id`` to ``to``. Returns False if it was not in a state that allows it anymore.

    ``expected`` pins the source state; without it the current state is read and the move is
    checked against the table (still a CAS on the state that was read).
    """
    current = expected or Run.objects.filter(pk=run_id).values_list("status", flat=True).first()
    if current is None:
        return False
    if to not in RUN_TRANSITIONS.get(current, frozenset()):
        if expected is None and current in RUN_TERMINAL:
            return False  # already finished: a lost race, not a programming error
        raise InvalidTransition(f"run {run_id}: {current} → {to} is not allowed")
    now = timezone.now()
    fields = _run_timestamps(to, now)
    # First entry only: don't overwrite a timestamp that is already set.
    updates: dict[str, Any] = {"status": to, "updated_at": now}
    for name, value in fields.items():
        updates[name] = value
    if to == RunStatus.FAILED:
        updates["failure_reason"] = reason[:2000]
    # The write comes first in the transaction: SQLite can't upgrade a read transaction to a
    # write one while another connection writes, and on PostgreSQL it takes the row lock early.
    with transaction.atomic():
        if Run.objects.filter(pk=run_id, status=current).update(**updates) != 1:
            return False
        RunStatusHistory.objects.create(
            run_id=run_id, from_status=current, to_status=to, reason=reason[:2000], changed_by=actor_or_none(user)
        )
        if to in (RunStatus.CANCELLED, RunStatus.FAILED):
            _run_close(run_id, to, reason)
    return True


def _run_close(run_id: int, to: str, reason: str) -> None:
    """A run that ends early leaves nothing open: lanes still going end with it (cancelled, or
    failed with the run's reason), and a run scorecard that will never come is ``skipped``.

    Cases still running stop at their next cancel check and finish on their own; a lane or run
    already terminal is left as it is (a late case never moves it again).
    """
    run_lanes_close(run_id=run_id, to=to, reason=reason)
    Run.objects.filter(pk=run_id, score_status=ScoreStatus.PENDING).update(score_status=ScoreStatus.SKIPPED)


def run_lanes_close(*, run_id: int, to: str, reason: str = "") -> int:
    """End every open lane of a run that ended early (``to``: cancelled or failed), whatever phase
    it is in: a lane moved by a worker meanwhile (``queued → ready → executing`` at the start) is
    read again and ended from its new state. Returns how many it ended."""
    lane_to = LaneStatus.CANCELLED if to == RunStatus.CANCELLED else LaneStatus.FAILED
    why = "the run was cancelled" if to == RunStatus.CANCELLED else f"the run failed: {reason}"
    closed = 0
    for lane_id in Lane.objects.filter(run_id=run_id).exclude(status__in=list(LANE_TERMINAL)).values_list("pk", flat=True):
        for _ in range(len(LANE_TRANSITIONS)):  # each lost race means the lane moved one state on: bounded
            status = Lane.objects.filter(pk=lane_id).values_list("status", flat=True).first()
            if status is None or status in LANE_TERMINAL:
                break
            if lane_transition(lane_id=lane_id, to=lane_to, expected=status, reason=why):
                closed += 1
                break
    return closed


def lane_transition(*, lane_id: int, to: str, reason: str = "", expected: str | None = None) -> bool:
    current = expected or Lane.objects.filter(pk=lane_id).values_list("status", flat=True).first()
    if current is None:
        return False
    if to not in LANE_TRANSITIONS.get(current, frozenset()):
        if expected is None and current in LANE_TERMINAL:
            return False
        raise InvalidTransition(f"lane {lane_id}: {current} → {to} is not allowed")
    now = timezone.now()
    updates: dict[str, Any] = {"status": to}
    if to == LaneStatus.EXECUTING and current != LaneStatus.EVALUATING:  # not an adaptive run's next round
        updates["started_at"] = now
    if to in LANE_TERMINAL:
        updates["finished_at"] = now
    if to == LaneStatus.FAILED:
        updates["failure_reason"] = reason[:2000]
    with transaction.atomic():
        if Lane.objects.filter(pk=lane_id, status=current).update(**updates) != 1:
            return False
        LaneStatusHistory.objects.create(lane_id=lane_id, from_status=current, to_status=to, reason=reason[:2000])
    return True


def case_claim(*, case_run_id: int, stale_before: Any = None, retry_of: int | None = None) -> CaseRun | None:
    """Claim a case for execution (attempt + 1). Returns the claimed row, or None.

    Claimable: a ``queued`` case; a ``running`` one whose heartbeat is older than
    ``stale_before`` (its worker died); or, for a retry, the ``running`` case still at attempt
    ``retry_of``. Each is a CAS on (status, attempt), so of two deliveries only one wins, and the
    attempt number in event ids keeps attempts apart.
    """
    now = timezone.now()
    if retry_of is None:
        # The common case, a first delivery of a queued case: claim straight away (one CAS).
        values = {"status": CaseStatus.RUNNING, "claimed_at": now, "heartbeat_at": now, "started_at": now}
        where: dict[str, Any] = {"status": CaseStatus.QUEUED}
        # The CAS and the read in one round trip where the database allows it (runs/adapters/statements.py).
        cas = _CASE_UPDATE.statement(case_run_id, where=where, values=values, increment=("attempt",))
        claimed = _CLAIMED.get(case_run_id, updated=cas)
        if claimed is not None:
            return claimed  # type: ignore[return-value]
    row = CaseRun.objects.filter(pk=case_run_id).values("status", "attempt", "heartbeat_at").first()
    if row is None:
        return None
    running = row["status"] == CaseStatus.RUNNING
    claimable = (
        (row["status"] == CaseStatus.QUEUED and retry_of is None)
        or (running and retry_of is not None and row["attempt"] == retry_of)
        or (running and stale_before is not None and (row["heartbeat_at"] is None or row["heartbeat_at"] < stale_before))
    )
    if not claimable:
        return None
    changed = CaseRun.objects.filter(pk=case_run_id, status=row["status"], attempt=row["attempt"]).update(
        status=CaseStatus.RUNNING,
        attempt=F("attempt") + 1,
        claimed_at=now,
        heartbeat_at=now,
        started_at=now if row["status"] == CaseStatus.QUEUED else F("started_at"),
    )
    if changed != 1:
        return None
    return _claimed(case_run_id)


def _claim_queryset() -> Any:
    # What the worker needs, in one query with as few models as possible (building them costs
    # more than the query): the pack version's manifest is cached by the worker, keyed by its
    # checksum, and of the input set only the key is needed.
    return CaseRun.objects.select_related("run", "lane", "case").annotate(
        pack_checksum=F("run__pack_version__manifest_checksum"), input_set_key=F("run__input_set__key")
    )


_CLAIMED = PrecompiledGet(_claim_queryset)  # its SQL is compiled once per process (runs/adapters/statements.py)
_CASE_UPDATE = RowUpdate(CaseRun)  # the claim's and the finish's single-row writes, without the ORM's compile


def _claimed(case_run_id: int) -> CaseRun:
    case_run = _CLAIMED.get(case_run_id)
    if case_run is None:  # pragma: no cover - the row was just claimed by this process
        raise CaseRun.DoesNotExist(case_run_id)
    return case_run  # type: ignore[return-value]


def case_close(*, case_run_id: int, attempt: int, status: str, fields: dict[str, Any]) -> bool:
    """``running → completed|failed|cancelled`` for the attempt that holds the claim."""
    updates = dict(fields)
    updates.update(status=status, finished_at=timezone.now())
    return _CASE_UPDATE(case_run_id, where={"status": CaseStatus.RUNNING, "attempt": attempt}, values=updates) == 1


def cases_cancel_open(*, run_id: int) -> int:
    """Cases not yet started become ``cancelled``; running ones stop at their next cancel check."""
    return CaseRun.objects.filter(run_id=run_id, status=CaseStatus.QUEUED).update(
        status=CaseStatus.CANCELLED, stop_reason="cancelled", finished_at=timezone.now()
    )

"""Run-level services: start a run (its first fan-out), cancel it, and the reaper's safety net.

The worker's side of a case (claim, attempt, finish, lane and run completion) is the pipeline
(runs/pipeline/); these services call into it.

Every step is safe to repeat: transitions are compare-and-set, dispatch counts what is already
in flight, and scoring services are idempotent. A task that runs twice changes nothing the
second time.
"""

from __future__ import annotations

import datetime as dt
import logging
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.db.models.fields.json import KeyTextTransform, KeyTransform
from django.utils import timezone

from core.errors import Conflict
from runs.jobs import CaseRunDeadline, CaseRunExecute, CaseRunFinalize, RunStart
from runs.lifecycle import InvalidTransition, case_close, cases_cancel_open, lane_transition, run_lanes_close, run_transition
from runs.models import HOSTED_EXTERNAL, RUN_TERMINAL, CaseRun, CaseStatus, Lane, LaneStatus, Run, RunStatus, ScoreStatus
from runs.pipeline.advance import (
    case_after_finish,
    lane_advance,
    lane_dispatch,
    lanes_dispatch_interleaved,
    run_advance,
    workspace_dispatch,
)
from runs.pipeline.context import MAX_ATTEMPTS
from runs.pipeline.hosted.finish import hosted_cases_cancel
from runs.queue import enqueue_now

logger = logging.getLogger(__name__)

ORPHAN_AFTER = dt.timedelta(minutes=15)
STALE_AFTER = dt.timedelta(seconds=60)
LOST_DISPATCH_AFTER = dt.timedelta(minutes=10)


class RunNotCancellable(Conflict):
    """The run is already over (or another request finished it first): a 409."""

    default_code = "run_not_cancellable"


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
            # Cancelled (or failed) while provisioning: the lanes this start moved after the cancel
            # read them end too, and no case is left open (docs/runs.md "Cancel").
            ended = Run.objects.filter(pk=run_id).values_list("status", flat=True).first() or RunStatus.CANCELLED
            run_lanes_close(run_id=run_id, to=ended)
            cases_cancel_open(run_id=run_id)
            return False
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


CANCELLABLE = (RunStatus.QUEUED, RunStatus.PROVISIONING, RunStatus.RUNNING)


@transaction.atomic
def run_cancel(*, run: Run, user: Any) -> Run:
    """Cancel a run that can still be cancelled (queued, provisioning or running): queued cases at
    once, hosted ones at once (no worker waits for them), native running ones at their worker's
    next cancel check; its lanes end whatever phase they are in. A run that is scoring has every
    case finished: it is not cancelled, it completes (docs/runs.md "Cancel")."""
    current = Run.objects.filter(pk=run.pk).values_list("status", flat=True).first()
    if current not in CANCELLABLE or not run_transition(
        run_id=run.pk, to=RunStatus.CANCELLED, expected=current, reason="cancelled by user", user=user
    ):
        status = Run.objects.get(pk=run.pk).get_status_display().lower()
        why = " (every case has finished; its scorecard is being computed)" if status == RunStatus.SCORING.label.lower() else ""
        raise RunNotCancellable(f"This run is {status}{why} and can't be cancelled: only a queued, provisioning or running run can.")
    cases_cancel_open(run_id=run.pk)
    hosted_cases_cancel(run_id=run.pk)
    workspace_dispatch(workspace_id=run.workspace_id)  # its slots go to the workspace's other runs now
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
    stale = stale.annotate(target=KeyTextTransform("execution_target", KeyTransform("runtime_profile", "lane__snapshot")))
    for case_run_id, attempt, lane_id, target in stale.values_list("pk", "attempt", "lane_id", "target")[:500]:
        if target == HOSTED_EXTERNAL:  # its agent has it (no worker to have died): past its deadline, close it
            enqueue_now(CaseRunDeadline(case_run_id=case_run_id, attempt=attempt))
            report["requeued"] += 1
            continue
        if attempt >= MAX_ATTEMPTS:  # its workers keep dying (a case that kills them): stop here
            error = f"the worker running this case stopped responding ({attempt} attempts)"
            fields = {"stop_reason": "sandbox_error", "error": error}
            with transaction.atomic():
                if case_close(case_run_id=case_run_id, attempt=attempt, status=CaseStatus.FAILED, fields=fields):
                    case_after_finish(case_run_id=case_run_id, lane_id=lane_id, status=CaseStatus.FAILED)
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
        if case_close(case_run_id=case_run_id, attempt=attempt, status=CaseStatus.CANCELLED, fields=fields):
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
        lane_dispatch(lane_id)
        lane_advance(lane_id=lane_id)
        report["advanced"] += 1
    for run_id in Run.objects.filter(status=RunStatus.SCORING, updated_at__lt=now - stale_after).values_list("pk", flat=True):
        run_advance(run_id=run_id)
    return report


def run_redispatch(*, now: dt.datetime | None = None, after: dt.timedelta | None = None) -> dict[str, int]:
    """Send again, within seconds, what should be in the broker but may not be: the start of a run
    still queued, and the message of a case dispatched but not claimed, ``after`` (default
    ``RUNS_REDISPATCH_AFTER_SECONDS``) since it was last sent (docs/operations.md "Nothing lost").

    The database is the outbox: a queued run and a dispatched case are committed before their
    message is published, so a broker that restarted (and lost its queues) or a web process that
    died between the commit and the publish leaves them here, and this sends them again. Each send
    moves the row's clock (``updated_at``, ``dispatched_at``) with a compare-and-set first, so two
    sweeps never both send, and a message that was not lost makes its copy a no-op: the run's
    start and the case's claim are compare-and-sets too.
    """
    now = now or timezone.now()
    cutoff = now - (after if after is not None else dt.timedelta(seconds=settings.RUNS_REDISPATCH_AFTER_SECONDS))
    report = {"runs": 0, "cases": 0}
    for run_id in Run.objects.filter(status=RunStatus.QUEUED, updated_at__lt=cutoff).values_list("pk", flat=True)[:500]:
        if Run.objects.filter(pk=run_id, status=RunStatus.QUEUED, updated_at__lt=cutoff).update(updated_at=now):
            enqueue_now(RunStart(run_id=run_id))
            report["runs"] += 1
    lost = CaseRun.objects.filter(run__status=RunStatus.RUNNING, status=CaseStatus.QUEUED, dispatched_at__lt=cutoff)
    for case_run_id in lost.values_list("pk", flat=True)[:1000]:
        if CaseRun.objects.filter(pk=case_run_id, status=CaseStatus.QUEUED, dispatched_at__lt=cutoff).update(dispatched_at=now):
            enqueue_now(CaseRunExecute(case_run_id=case_run_id))
            report["cases"] += 1
    if report["runs"] or report["cases"]:
        logger.info("re-dispatched %s run starts and %s cases not claimed since %s", report["runs"], report["cases"], cutoff)
    return report

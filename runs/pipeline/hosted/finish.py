"""Finishing a hosted case without a worker: its agent's terminal event, its deadline, or a cancel.

A hosted case's worker only hands the case over (runs/pipeline/hosted/attempt.py). The case is
then finished by whichever comes first, each under the lane row's lock (runs/events.py LaneRow), so
exactly one of them records the terminal event and closes the case:

- the callback that stores the agent's terminal event finishes it in the callback's own
  transaction (:func:`hosted_case_finish`, called by ``callback.hosted_event_record``);
- the ``runs.case_run_deadline`` job closes it at its deadline (:func:`hosted_case_deadline`);
- cancelling the run closes it at once (:func:`hosted_cases_cancel`).

The finish is the pipeline's own (runs/pipeline/execute.py ``case_finish``): the outcome read back from the stored
events, the case closed with a compare-and-set, its lane refilled; the case is scored by the
``runs.case_run_finalize`` job after the commit (an LLM judge has no place in a web request).
"""

from __future__ import annotations

import datetime as dt
import logging

from django.db import transaction
from django.utils import timezone

from engine.modes.case import STOP_CANCELLED, STOP_DEADLINE_EXCEEDED
from runs.events import LaneRow, RunEventSink
from runs.jobs import CaseRunDeadline
from runs.lifecycle import case_close
from runs.models import HOSTED_EXTERNAL, CaseRun, CaseStatus
from runs.pipeline.context import CaseContext, case_context
from runs.pipeline.execute import case_finish
from runs.pipeline.hosted.attempt import close_attempt, deadline_seconds, outcome_from_events
from runs.queue import enqueue_on_commit

logger = logging.getLogger(__name__)


def _open_case(case_run_id: int, attempt: int) -> CaseContext | None:
    """The case's context when it is still running at ``attempt`` (the caller holds the lane lock)."""
    case_run = CaseRun.objects.select_related("run", "lane", "case").filter(pk=case_run_id).first()
    if case_run is None or case_run.attempt != attempt or case_run.status != CaseStatus.RUNNING:
        return None
    return case_context(case_run)


def _finish(ctx: CaseContext) -> str:
    case_run = ctx.case_run
    sink = RunEventSink(
        run_id=case_run.run_id,
        lane_id=case_run.lane_id,
        case_run_id=case_run.pk,
        attempt=case_run.attempt,
        redactor=ctx.redactor,
        interval=0,
    )  # the agent's events are stored already: nothing is buffered here
    return case_finish(case_run, outcome_from_events(case_run), sink, ctx)


def hosted_case_finish(*, case_run_id: int, attempt: int) -> str:
    """Finish a hosted case whose terminal event was just stored, in the caller's transaction,
    which holds the lane row's lock (the callback's)."""
    ctx = _open_case(case_run_id, attempt)
    return _finish(ctx) if ctx is not None else "finished"


def hosted_case_deadline(*, case_run_id: int, attempt: int) -> str:
    """At a hosted case's deadline: close and finish it unless its agent finished it first.

    Early (a job delivered before its time, or re-sent by the reaper): sent again for the rest.
    """
    case_run = CaseRun.objects.filter(pk=case_run_id).values("lane_id", "attempt", "status").first()
    if case_run is None or case_run["attempt"] != attempt or case_run["status"] != CaseStatus.RUNNING:
        return "finished"
    with transaction.atomic():
        LaneRow(case_run["lane_id"]).lock()
        ctx = _open_case(case_run_id, attempt)
        if ctx is None:
            return "finished"
        seconds = deadline_seconds(ctx)
        deadline = (ctx.case_run.claimed_at or timezone.now()) + dt.timedelta(seconds=seconds)
        left = (deadline - timezone.now()).total_seconds()
        if left > 0.5:
            enqueue_on_commit(CaseRunDeadline(case_run_id=case_run_id, attempt=attempt), countdown=left)
            return "waiting"
        close_attempt(ctx, STOP_DEADLINE_EXCEEDED, f"the hosted agent did not finish within its deadline of {seconds:g}s")
        logger.info("hosted case run %s attempt %s: deadline of %gs passed", case_run_id, attempt, seconds)
        return _finish(ctx)


def hosted_cases_cancel(*, run_id: int) -> int:
    """Close the run's running hosted cases (the run was cancelled): no worker is there to notice."""
    closed = 0
    hosted = CaseRun.objects.filter(
        run_id=run_id, status=CaseStatus.RUNNING, lane__snapshot__runtime_profile__execution_target=HOSTED_EXTERNAL
    )
    for case_run_id, lane_id, attempt in hosted.values_list("pk", "lane_id", "attempt"):
        with transaction.atomic():
            LaneRow(lane_id).lock()
            ctx = _open_case(case_run_id, attempt)
            if ctx is None:
                continue
            close_attempt(ctx, STOP_CANCELLED, "the run was cancelled")
            fields = {"stop_reason": STOP_CANCELLED, "error": "the run was cancelled"}
            closed += case_close(case_run_id=case_run_id, attempt=attempt, status=CaseStatus.CANCELLED, fields=fields)
    return closed

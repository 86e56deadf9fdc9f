"""``case_run_execute``: one lane × case, from claim to recorded result (spec runtime.md §3, §4.3).

Claim the case (compare-and-set), build its context once (runs/pipeline/context.py), run its
attempt — native (runs/pipeline/native.py) or handed to a hosted agent
(runs/pipeline/hosted/attempt.py) — then retry it later or finish it (:func:`case_finish`).

The finish is one transaction: the case's result, its score and ``scoring.*`` events (scored
with the finish) and its last events are one event batch, the lane row is locked once per case
(by the batch's sequence reservation, which also reads the lane's dispatch state for the
refill), and a case is never seen finished without its events (docs/performance.md). Then,
committed, the lane and the run move on (runs/pipeline/advance.py).
"""

from __future__ import annotations

import datetime as dt
import logging
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from engine.events import EventEmitter
from engine.modes.case import CANCELLED, COMPLETED, STOP_PROVIDER_ERROR, STOP_SANDBOX_ERROR
from engine.providers.errors import CREDENTIAL_UNAVAILABLE
from engine.redact import Redactor
from engine.types import EventSink, Usage
from runs.events import EventQuota, RunEventSink
from runs.jobs import CaseRunExecute
from runs.lifecycle import case_claim, case_close
from runs.models import CaseRun, CaseStatus, RunStatus
from runs.pipeline.advance import ScoreHere, case_after_finish, lane_dispatch, lane_fail_fast
from runs.pipeline.context import MAX_ATTEMPTS, CaseContext, attempt_prefix, case_context
from runs.pipeline.hosted.attempt import HostedWait, hosted_case_dispatch, hosted_case_wait
from runs.pipeline.native import CaseAttempt, attempt_failed, configuration_failure, native_attempt_run, security_monitor
from runs.queue import enqueue_on_commit
from scoring.services import CaseScoring, case_scoring, case_scoring_save

logger = logging.getLogger(__name__)

WORKER_EVENT_SOURCE = "agent_harness_worker"
ERROR_MAX_CHARS = 5000


def _claim(case_run_id: int, retry_of: int | None, stale_seconds: float | None) -> CaseRun | None:
    stale_before = timezone.now() - dt.timedelta(seconds=stale_seconds) if stale_seconds else None
    return case_claim(case_run_id=case_run_id, stale_before=stale_before, retry_of=retry_of)


def _context(case_run: CaseRun, score_inline: bool) -> tuple[CaseContext | None, str | None]:
    """The claimed case's context, or None and why it could not be built (a retryable worker error)."""
    try:
        return case_context(case_run, score_inline=score_inline), None
    except Exception as exc:
        logger.exception("building the context of case run %s failed", case_run.pk)
        return None, f"worker error: {type(exc).__name__}"


def case_run_execute(
    *, case_run_id: int, retry_of: int | None = None, stale_seconds: float | None = None, score_inline: bool = False
) -> str:
    """Claim and run one case. Returns what happened (for logs and tests); never raises for case problems.

    A hosted case is handed to its agent and left running ("dispatched"): no process waits for it.

    ``score_inline``: score the finished case here, from the events just written, instead of
    enqueueing ``runs.case_run_finalize`` (the worker task does; it saves a task round trip and
    reading the case back). A case left unscored by a dying worker is re-finalized by the reaper.
    """
    case_run = _claim(case_run_id, retry_of, stale_seconds)
    if case_run is None:
        logger.info("case run %s: already claimed or finished", case_run_id)
        return "skipped"
    if case_run.run.status != RunStatus.RUNNING:
        fields = {"stop_reason": "cancelled", "error": f"the run is {case_run.run.status}"}
        case_close(case_run_id=case_run.pk, attempt=case_run.attempt, status=CaseStatus.CANCELLED, fields=fields)
        return "cancelled"
    ctx, context_error = _context(case_run, score_inline)
    sink = RunEventSink(
        run_id=case_run.run_id,
        lane_id=case_run.lane_id,
        case_run_id=case_run.pk,
        attempt=case_run.attempt,
        redactor=ctx.redactor if ctx else Redactor([]),
        interval=settings.RUNS_EVENT_FLUSH_SECONDS,
        keep=ctx.keeps_events if ctx else False,
        # a native attempt's stored bytes are counted and budgeted here; a hosted agent's at its callback
        quota=EventQuota.from_settings() if ctx is not None and not ctx.hosted else None,
    )
    # A security pack's monitor (in front of the sink) finds leaks before they are masked
    # (docs/security-evaluation.md).
    engine_sink: EventSink = security_monitor(ctx, sink, ctx.security) if ctx and ctx.security else sink
    emitter = EventEmitter(
        engine_sink,
        prefix=(ctx.prefix if ctx else attempt_prefix(case_run)) + ":worker",
        source=WORKER_EVENT_SOURCE,
        case_key=case_run.case_key,
    )
    result: CaseAttempt | HostedWait
    if ctx is None:
        result = attempt_failed(emitter, STOP_SANDBOX_ERROR, str(context_error), retryable=True)
    elif ctx.secrets_error:
        result = attempt_failed(emitter, STOP_PROVIDER_ERROR, ctx.secrets_error, code=CREDENTIAL_UNAVAILABLE)
    else:  # the attempt runs under its pulse (heartbeat, timed flush: runs/pipeline/native.py AttemptPulse)
        result = _attempt(ctx, sink=engine_sink, emitter=emitter, events=sink)
    if isinstance(result, HostedWait):  # the agent has the case; its callback or its deadline finishes it
        sink.flush()
        if ctx is not None:
            hosted_case_wait(ctx, result)
        return "dispatched"
    if result.retryable and case_run.attempt < MAX_ATTEMPTS:
        sink.flush()
        _retry_later(case_run, result, ctx.redactor if ctx else Redactor([]))
        return "retrying"
    finished = case_finish(case_run, result, sink, ctx)
    reason = configuration_failure(result)
    if reason and finished != "superseded":
        lane_fail_fast(lane_id=case_run.lane_id, reason=reason)
    return finished


def _attempt(ctx: CaseContext, *, sink: EventSink, emitter: EventEmitter, events: RunEventSink) -> CaseAttempt | HostedWait:
    try:
        if ctx.hosted:  # the team's own server runs the agent (runs/pipeline/hosted/, docs/hosted-agents.md)
            return hosted_case_dispatch(ctx, events=events)
        return native_attempt_run(ctx, sink=sink, emitter=emitter, events=events)
    except Exception as exc:
        logger.exception("case run %s crashed", ctx.case_run.pk)
        return attempt_failed(emitter, STOP_SANDBOX_ERROR, f"worker error: {type(exc).__name__}", retryable=True)


def _retry_later(case_run: CaseRun, result: CaseAttempt, redactor: Redactor) -> None:
    """Keep the claim, note the error and enqueue the next attempt after an exponential backoff."""
    attempt = case_run.attempt
    delay = float(settings.RUNS_RETRY_BACKOFF_SECONDS) * (2 ** (attempt - 1))
    CaseRun.objects.filter(pk=case_run.pk, attempt=attempt, status=CaseStatus.RUNNING).update(
        error=redactor.text(result.outcome.error or "")[:ERROR_MAX_CHARS], heartbeat_at=timezone.now() + dt.timedelta(seconds=delay)
    )
    enqueue_on_commit(CaseRunExecute(case_run_id=case_run.pk, retry_of=attempt), countdown=min(delay, 120.0))
    logger.info("case run %s attempt %s failed (%s); retrying in %.0f s", case_run.pk, attempt, result.outcome.stop_reason, delay)


# -- the finish ---------------------------------------------------------------------------------


def result_fields(result: CaseAttempt, redactor: Redactor) -> tuple[str, dict[str, Any]]:
    """The case's final status and the fields that record it, redacted."""
    outcome, verification = result.outcome, result.verification
    usage = outcome.usage or Usage()
    status = {COMPLETED: CaseStatus.COMPLETED, CANCELLED: CaseStatus.CANCELLED}.get(outcome.status, CaseStatus.FAILED)
    fields = {
        "stop_reason": outcome.stop_reason or "",
        "final_output": redactor.text(outcome.final_output) if outcome.final_output is not None else None,
        "error": redactor.text(outcome.error or "")[:ERROR_MAX_CHARS],
        "step_count": outcome.step_count,
        "tool_call_count": outcome.tool_call_count,
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
        "total_tokens": usage.total_tokens,
        "duration_ms": outcome.duration_ms,
        "verification": redactor.json(verification) if verification else {},
        "provider_failure": redactor.json(outcome.provider_failure) if outcome.provider_failure else None,
    }
    return status, fields


def _score_with_finish(ctx: CaseContext, status: str, sink: RunEventSink) -> CaseScoring | None:
    """The case's verdict from its events (as the sink kept them), or None to score it after its finish.

    Only a native attempt's sink keeps its events (its own events are its whole evidence:
    scoring/services/cases.py), a cancelled case is not scored, and a spec with LLM judges is scored
    after the finish (``judges=False``).
    """
    if not ctx.score_inline or status == CaseStatus.CANCELLED or sink.evidence is None:
        return None
    return case_scoring(ctx.case_run, spec=ctx.evaluation_spec, security=ctx.security, events=sink.evidence, judges=False)


def case_finish(case_run: CaseRun, result: CaseAttempt, sink: RunEventSink, ctx: CaseContext | None) -> str:
    """Finish the case with its result (if this attempt still holds the claim), then move the lane on.

    ``ctx`` is None when the case's context could not be built (the failure is the result).
    """
    status, fields = result_fields(result, ctx.redactor if ctx else Redactor([]))
    if sink.quota is not None:  # the attempt's stored event bytes with its last batch (a native case's quota):
        # read, not asked for, so the finish enters runs.events once (issue 21); the attempt's pulse
        # has stopped, so no flush moves bytes from one to the other meanwhile
        fields["hosted_bytes"] = sink.stored_bytes + sink.pending_bytes
    for name, value in fields.items():  # the row as it is about to be, for scoring
        setattr(case_run, name, value)
    case_run.status = status
    verdict = _score_with_finish(ctx, status, sink) if ctx is not None else None
    with transaction.atomic():
        finished = case_close(
            case_run_id=case_run.pk, attempt=case_run.attempt, status=status, fields={**fields, **(verdict.fields if verdict else {})}
        )
        if finished and verdict is not None:
            case_scoring_save(case_run, verdict, in_finish=True)
        # A lost claim's events are kept; a finished case's batch locks the lane row for the refill below.
        state = sink.write_final(extra=verdict.events if finished and verdict is not None else None)
        maybe_done = lane_dispatch(case_run.lane_id, state=state, locked=state is not None).maybe_done if finished else None
    if not finished:
        logger.info("case run %s attempt %s lost its claim; result dropped", case_run.pk, case_run.attempt)
        return "superseded"
    score_here = None
    if ctx is not None and ctx.score_inline and verdict is None:
        score_here = ScoreHere(case_run=case_run, events=sink.evidence, spec=ctx.evaluation_spec, security=ctx.security)
    case_after_finish(
        case_run_id=case_run.pk,
        lane_id=case_run.lane_id,
        status=status,
        maybe_done=maybe_done,
        scored=verdict is not None,
        score_here=score_here,
    )
    return str(status)

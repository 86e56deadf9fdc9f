"""A hosted lane's case attempt (docs/hosted-agents.md): hand the case to the agent, and let go.

The worker issues the case's callback token and POSTs the case to the agent's endpoint, then
ends its task: nothing polls. The agent's terminal event (``error`` or ``run_finished``) finishes
the case in the callback's own transaction (runs/pipeline/hosted/finish.py); at the deadline (the
lane's run timeout) the ``runs.case_run_deadline`` job closes it instead, and the callback then
answers 410. The outcome is read back from the stored events.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from typing import Any

from django.conf import settings
from django.utils import timezone

from engine.events import (
    MODEL_CALL_COMPLETED,
    SYSTEM_OUTPUT_FINALIZED,
    SYSTEM_RUN_COMPLETED,
    SYSTEM_RUN_FAILED,
    TOOL_CALL_RESULTS,
    iso_now,
)
from engine.modes import CaseOutcome
from engine.modes.case import CANCELLED, COMPLETED, FAILED, STOP_CANCELLED, STOP_PROVIDER_ERROR, Limits
from engine.modes.context import render, template_context, visible_case
from engine.modes.prompt_eval import instructions_for
from engine.scoring.tiers import BLACK_BOX, STRUCTURED_TRACE
from engine.types import Event, Usage
from runs.events import RunEventSink
from runs.jobs import CaseRunDeadline
from runs.models import CaseRun, CaseStatus, RunEvent
from runs.pipeline.context import CaseContext
from runs.pipeline.hosted import schemas
from runs.pipeline.hosted.dispatch import DispatchFailed, case_dispatch
from runs.pipeline.hosted.events import SOURCE_HOSTED, STOP_AGENT_ERROR, hosted_case_close
from runs.pipeline.hosted.tokens import TokenScope, token_issue
from runs.pipeline.native import NO_DEADLINE_SECONDS, AttemptPulse, CaseAttempt
from runs.queue import enqueue_on_commit

JSON = Any
STOP_AGENT_UNREACHABLE = "agent_unreachable"


def callback_url(case_run_id: int) -> str:
    return f"{settings.HOSTED_CALLBACK_BASE_URL}/hooks/hosted/{case_run_id}/events"


def deadline_seconds(ctx: CaseContext) -> float:
    return Limits.from_request(ctx.request()).run_timeout_seconds or NO_DEADLINE_SECONDS


def case_payload(ctx: CaseContext, *, token: str, deadline: dt.datetime, seconds: float) -> dict[str, JSON]:
    """What the agent's endpoint receives (``schemas.CASE_SCHEMA``): the task, never the expectations.

    A security pack's planted values and the workspace's secrets are masked like in native events
    (``ctx.redactor``): the case goes to a host outside the platform (issue 23).
    """
    case_run, inputs = ctx.case_run, ctx.inputs
    mask = ctx.redactor
    text, _ = render(instructions_for(inputs.challenge), template_context(inputs.case))
    files = ctx.staged_files
    return {
        "protocol_version": schemas.PROTOCOL_VERSION,
        "run_id": case_run.run_id,
        "lane_id": case_run.lane_id,
        "case_key": case_run.case_key,
        "attempt": case_run.attempt,
        "trial": case_run.trial,
        "instructions": mask.text(text),
        "inputs": mask.json(visible_case(inputs.case).get("inputs") or []),
        "workspace_files": [{"path": path, "bytes": len(data)} for path, data in sorted(files.items())],
        "callback_url": callback_url(case_run.pk),
        "token": token,
        "deadline": deadline.isoformat().replace("+00:00", "Z"),
        "deadline_seconds": seconds,
    }


def close_attempt(ctx: CaseContext, stop_reason: str, error: str) -> bool:
    """Record the pipeline's own terminal event for the attempt (dispatch failure, deadline, cancel)
    unless the agent's got there first. True when this call closed it."""
    case_run = ctx.case_run
    event = Event(
        event_id=f"{ctx.prefix}:worker:hosted:{stop_reason}",
        event_type=SYSTEM_RUN_FAILED,
        source=SOURCE_HOSTED,
        occurred_at=iso_now(),
        payload={"error": error, "stop_reason": stop_reason, "case_key": case_run.case_key},
        case_key=case_run.case_key,
    )
    return hosted_case_close(case_run=case_run, attempt=case_run.attempt, event=event)


def _events(case_run: CaseRun) -> list[tuple[str, dict[str, JSON]]]:
    rows = RunEvent.objects.filter(case_run=case_run, attempt=case_run.attempt).order_by("sequence_number")
    return [(t, p if isinstance(p, dict) else {}) for t, p in rows.values_list("event_type", "payload")]


def _usage(events: list[tuple[str, dict[str, JSON]]]) -> Usage:
    usage = Usage()
    for event_type, payload in events:
        if event_type == MODEL_CALL_COMPLETED and isinstance(payload.get("usage"), dict):
            counts = payload["usage"]
            usage.input_tokens += int(counts.get("input_tokens") or 0)
            usage.output_tokens += int(counts.get("output_tokens") or 0)
            usage.total_tokens += int(counts.get("total_tokens") or 0) or int(counts.get("input_tokens") or 0) + int(
                counts.get("output_tokens") or 0
            )
    return usage


def evidence_tier(event_types: set[str]) -> str:
    """``structured_trace`` when the agent reported any model or tool call, else ``black_box``."""
    return STRUCTURED_TRACE if event_types & schemas.TRACE_TYPES else BLACK_BOX


def outcome_from_events(case_run: CaseRun) -> CaseAttempt:
    """The attempt's outcome as its stored events tell it (the agent's, and the pipeline's own
    deadline, cancel or dispatch failure); its duration runs from the claim."""
    events = _events(case_run)
    types = {event_type for event_type, _ in events}
    terminal = next(((t, p) for t, p in reversed(events) if t in (SYSTEM_RUN_COMPLETED, SYSTEM_RUN_FAILED)), None)
    answer = next((p.get("final_output") for t, p in events if t == SYSTEM_OUTPUT_FINALIZED), None)
    completed = terminal is not None and terminal[0] == SYSTEM_RUN_COMPLETED
    stop_reason = "completed" if completed else str((terminal or ("", {}))[1].get("stop_reason") or STOP_AGENT_ERROR)
    started = case_run.claimed_at or timezone.now()
    outcome = CaseOutcome(
        status=COMPLETED if completed else (CANCELLED if stop_reason == STOP_CANCELLED else FAILED),
        stop_reason=stop_reason,
        final_output=answer if completed and isinstance(answer, str) else None,
        step_count=sum(1 for t, _ in events if t == MODEL_CALL_COMPLETED),
        tool_call_count=sum(1 for t, _ in events if t in TOOL_CALL_RESULTS),
        usage=_usage(events),
        error=None if completed else str((terminal or ("", {}))[1].get("error") or "the agent reported an error"),
        duration_ms=max(0, int((timezone.now() - started).total_seconds() * 1000)),
    )
    return CaseAttempt(outcome=outcome, retryable=False, verification={"evidence_tier": evidence_tier(types)})


@dataclasses.dataclass(frozen=True)
class HostedWait:
    """The agent accepted the case: it stays running until the agent's terminal event (the
    callback finishes it) or its deadline (the ``runs.case_run_deadline`` job does)."""

    deadline: dt.datetime
    seconds: float


def hosted_case_dispatch(ctx: CaseContext, *, events: RunEventSink) -> CaseAttempt | HostedWait:
    """Hand the claimed case to the lane's agent: a failed attempt when it cannot be reached, else what to wait for.

    Nothing waits in the worker (docs/hosted-agents.md): no pool process is held while a hosted
    agent works, so slow agents never stall native lanes. The hand-over runs under the attempt's
    pulse (``events``: the attempt's event store, flushed on time).
    """
    with AttemptPulse.of(ctx, events):
        return _dispatch(ctx)


def _dispatch(ctx: CaseContext) -> CaseAttempt | HostedWait:
    case_run = ctx.case_run
    seconds = deadline_seconds(ctx)
    deadline = timezone.now() + dt.timedelta(seconds=seconds)
    scope = TokenScope(case_run.run_id, case_run.lane_id, case_run.pk, case_run.attempt, int(deadline.timestamp()) + 1)
    case = case_payload(ctx, token=token_issue(scope), deadline=deadline, seconds=seconds)
    CaseRun.objects.filter(pk=case_run.pk).update(hosted_bytes=0)  # each attempt has its own budget
    endpoint = str(case_run.lane.deployment_snapshot.get("endpoint_url") or "")
    try:
        if not endpoint:
            raise DispatchFailed("the deployment has no endpoint URL", retryable=False)
        case_dispatch(endpoint, case)
    except DispatchFailed as exc:
        close_attempt(ctx, STOP_AGENT_UNREACHABLE, str(exc))
        failed = CaseOutcome(status=FAILED, stop_reason=STOP_PROVIDER_ERROR, error=str(exc))
        return CaseAttempt(outcome=failed, retryable=exc.retryable, verification={"evidence_tier": BLACK_BOX})
    return HostedWait(deadline=deadline, seconds=seconds)


def hosted_case_wait(ctx: CaseContext, wait: HostedWait) -> None:
    """Leave the case running for its agent: the reaper leaves it alone until its deadline (its
    heartbeat is the deadline), and the deadline job closes it then if the agent has not."""
    case_run = ctx.case_run
    CaseRun.objects.filter(pk=case_run.pk, attempt=case_run.attempt, status=CaseStatus.RUNNING).update(heartbeat_at=wait.deadline)
    enqueue_on_commit(CaseRunDeadline(case_run_id=case_run.pk, attempt=case_run.attempt), countdown=max(wait.seconds, 0.0) + 0.5)

"""``case_run_execute``: one lane × case, from claim to recorded result (spec runtime.md §3, §4.3)."""

from __future__ import annotations

import datetime as dt
import json
import logging
import time
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from engine.events import EventEmitter
from engine.modes.case import CANCELLED, COMPLETED, STOP_PROVIDER_ERROR, STOP_SANDBOX_ERROR
from engine.providers.errors import CREDENTIAL_UNAVAILABLE
from engine.redact import Redactor
from engine.scoring.security import SecurityPolicy
from engine.tools.composed import secret_keys_used
from engine.types import EventSink, Usage
from packs.manifests import pack_manifest
from runs.events import RunEventSink
from runs.hosted.attempt import hosted_attempt_run, is_hosted
from runs.jobs import CaseRunExecute
from runs.lifecycle import case_claim, case_finish
from runs.models import CaseRun, CaseStatus, Run, RunStatus
from runs.queue import enqueue_on_commit
from runs.services.attempt import CaseAttempt, attempt_failed, case_attempt_run, emitter_prefix, security_monitor, security_policy
from runs.services.orchestrate import MAX_ATTEMPTS, case_after_finish, lane_refill, lane_state_columns
from runs.ticker import TICKER, Job
from scoring import services as scoring
from secrets_app.services import secrets_resolve_for_run
from workspaces.models import Workspace

logger = logging.getLogger(__name__)

WORKER_EVENT_SOURCE = "agent_harness_worker"
ERROR_MAX_CHARS = 5000


class CancelCheck:
    """True once the run stopped running or another worker re-claimed this case (≤ 1 query / 0.5 s)."""

    def __init__(self, case_run_id: int, attempt: int, every: float = 0.5) -> None:
        self.case_run_id, self.attempt, self.every = case_run_id, attempt, every
        self.checked_at = time.monotonic()
        self.cancelled = False

    def __call__(self) -> bool:
        if self.cancelled or time.monotonic() - self.checked_at < self.every:
            return self.cancelled
        self.checked_at = time.monotonic()
        row = CaseRun.objects.filter(pk=self.case_run_id).values_list("attempt", "run__status").first()
        self.cancelled = row is None or row[0] != self.attempt or row[1] != RunStatus.RUNNING
        return self.cancelled


class Heartbeat:
    """Touches ``CaseRun.heartbeat_at`` so the reaper can tell a live case from an abandoned one
    (every ``interval`` seconds, from the process's one ticker thread: runs/ticker.py)."""

    def __init__(self, case_run_id: int, attempt: int, interval: float) -> None:
        self.case_run_id, self.attempt, self.interval = case_run_id, attempt, interval
        self.job: Job | None = None

    def beat(self) -> None:
        CaseRun.objects.filter(pk=self.case_run_id, attempt=self.attempt, status=CaseStatus.RUNNING).update(heartbeat_at=timezone.now())

    def start(self) -> None:
        self.job = TICKER.add(self.beat, self.interval, name=f"heartbeat-{self.case_run_id}")

    def stop(self) -> None:
        if self.job is not None:
            TICKER.remove(self.job)
            self.job = None


def _workspace_of(run: Run) -> Workspace:
    # Only the workspace's id is needed; the claim does not load the workspace row.
    return run.workspace if Run.workspace.is_cached(run) else Workspace(pk=run.workspace_id)


def _secrets_needed(case_run: CaseRun) -> bool:
    """Whether this case must read the workspace's secrets (docs/secrets.md, "Runs of workspaces without secrets").

    Always when the workspace had a secret at run creation: every secret is masked in what a
    case stores, used or not. Otherwise only when the run can name one created since: a
    provider account's credential reference (the lane's, the user simulator's) or a pack tool's
    ``${secrets.…}``. The snapshots are searched as text for any "secret", a superset of both
    reference forms (a false match only costs the query).
    """
    run = case_run.run
    if run.workspace_had_secrets:
        return True
    snapshots = json.dumps([case_run.lane.snapshot, run.simulator_snapshot], default=str)
    if "secret" in snapshots.lower():
        return True
    try:
        pack = pack_manifest(pack_version_id=run.pack_version_id, checksum=getattr(case_run, "pack_checksum", None))
        return bool(secret_keys_used(pack.manifest))
    except Exception:  # noqa: BLE001 - the attempt reads the same manifest and reports the failure
        return True


def _secrets_load(case_run: CaseRun, workspace: Workspace) -> tuple[dict[str, str], str | None]:
    """(the workspace's secrets, in memory; an error when they could not be read)."""
    if not _secrets_needed(case_run):
        return {}, None
    try:
        return secrets_resolve_for_run(workspace=workspace), None
    except Exception as exc:
        logger.exception("loading secrets for case run %s failed", case_run.pk)
        return {}, f"could not load workspace secrets: {type(exc).__name__}"


def _claim(case_run_id: int, retry_of: int | None, stale_seconds: float | None) -> CaseRun | None:
    stale_before = timezone.now() - dt.timedelta(seconds=stale_seconds) if stale_seconds else None
    return case_claim(case_run_id=case_run_id, stale_before=stale_before, retry_of=retry_of)


def case_run_execute(
    *, case_run_id: int, retry_of: int | None = None, stale_seconds: float | None = None, score_inline: bool = False
) -> str:
    """Claim and run one case. Returns what happened (for logs and tests); never raises for case problems.

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
        case_finish(case_run_id=case_run.pk, attempt=case_run.attempt, status=CaseStatus.CANCELLED, fields=fields)
        return "cancelled"
    attempt = case_run.attempt
    workspace = _workspace_of(case_run.run)
    secrets, secrets_error = _secrets_load(case_run, workspace)
    policy = _security_policy(case_run)
    # A security pack's planted values are masked like secrets in everything stored; its monitor
    # (in front of the sink) finds leaks before that (docs/security-evaluation.md).
    redactor = Redactor([*secrets.values(), *(policy.canary_values if policy else [])])
    sink = RunEventSink(
        run_id=case_run.run_id,
        lane_id=case_run.lane_id,
        case_run_id=case_run.pk,
        attempt=attempt,
        redactor=redactor,
        interval=settings.RUNS_EVENT_FLUSH_SECONDS,
        keep=score_inline and attempt == 1 and not is_hosted(case_run),
    )  # later attempts: the evidence spans every attempt; hosted: the agent's events came through the callback
    engine_sink: EventSink = security_monitor(case_run, sink, policy) if policy else sink
    emitter = EventEmitter(engine_sink, prefix=emitter_prefix(case_run) + ":worker", source=WORKER_EVENT_SOURCE, case_key=case_run.case_key)
    heartbeat = Heartbeat(case_run.pk, attempt, settings.RUNS_HEARTBEAT_SECONDS)
    sink.start()  # flushes on time too: a long tool call's events are stored while it runs
    heartbeat.start()
    try:
        if secrets_error:
            result = attempt_failed(emitter, STOP_PROVIDER_ERROR, secrets_error, code=CREDENTIAL_UNAVAILABLE)
        else:
            result = _attempt(case_run, workspace=workspace, secrets=secrets, sink=engine_sink, emitter=emitter)
    finally:
        heartbeat.stop()
        sink.stop()
    if result.retryable and attempt < MAX_ATTEMPTS:
        sink.flush()
        _retry_later(case_run, attempt, result, redactor)
        return "retrying"
    return _record(case_run, attempt, result, redactor, score_inline=score_inline, sink=sink)


def _security_policy(case_run: CaseRun) -> SecurityPolicy | None:
    try:
        return security_policy(case_run)
    except Exception:  # the attempt reads the same manifest and reports the failure
        logger.exception("reading the security policy of case run %s failed", case_run.pk)
        return None


def _attempt(case_run: CaseRun, *, workspace: Workspace, secrets: dict[str, str], sink: EventSink, emitter: EventEmitter) -> CaseAttempt:
    cancel = CancelCheck(case_run.pk, case_run.attempt)
    try:
        if is_hosted(case_run):  # the team's own server runs the agent (runs/hosted/, docs/hosted-agents.md)
            return hosted_attempt_run(case_run, cancel=cancel)
        return case_attempt_run(case_run, workspace=workspace, secrets=secrets, sink=sink, cancel=cancel, emitter=emitter)
    except Exception as exc:
        logger.exception("case run %s crashed", case_run.pk)
        return attempt_failed(emitter, STOP_SANDBOX_ERROR, f"worker error: {type(exc).__name__}", retryable=True)


def _retry_later(case_run: CaseRun, attempt: int, result: CaseAttempt, redactor: Redactor) -> None:
    """Keep the claim, note the error and enqueue the next attempt after an exponential backoff."""
    delay = float(settings.RUNS_RETRY_BACKOFF_SECONDS) * (2 ** (attempt - 1))
    CaseRun.objects.filter(pk=case_run.pk, attempt=attempt, status=CaseStatus.RUNNING).update(
        error=redactor.text(result.outcome.error or "")[:ERROR_MAX_CHARS], heartbeat_at=timezone.now() + dt.timedelta(seconds=delay)
    )
    enqueue_on_commit(CaseRunExecute(case_run_id=case_run.pk, retry_of=attempt), countdown=min(delay, 120.0))
    logger.info("case run %s attempt %s failed (%s); retrying in %.0f s", case_run.pk, attempt, result.outcome.stop_reason, delay)


def _score_before_finish(case_run: CaseRun, status: str, sink: RunEventSink) -> scoring.CaseScoring | None:
    """The case's verdict from its events (stored and still waiting), or None to score it after its finish.

    Only a first attempt's sink keeps what it stored (a later attempt's evidence spans every
    attempt, read back from the database), and a cancelled case is not scored.
    """
    if status == CaseStatus.CANCELLED or sink.stored is None:
        return None
    try:
        return scoring.case_run_score_prepare(case_run=case_run, events=[*sink.stored, *sink.prepare_pending()])
    except Exception:  # scored after the finish instead, the usual way
        logger.exception("scoring case run %s before its finish failed", case_run.pk)
        return None


def _result_fields(result: CaseAttempt, redactor: Redactor) -> tuple[str, dict[str, Any]]:
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


def _record(
    case_run: CaseRun,
    attempt: int,
    result: CaseAttempt,
    redactor: Redactor,
    *,
    score_inline: bool = False,
    sink: RunEventSink,
) -> str:
    """Finish the case with its result (if this attempt still holds the claim), then move the lane on.

    The case's last events, its finish and (scored inline) its score and ``scoring.*`` events
    are one transaction and one event batch: the lane row is written once per case, and a case
    is never seen finished without its events (docs/performance.md).
    """
    status, fields = _result_fields(result, redactor)
    if score_inline:
        for name, value in fields.items():  # the row as it is about to be, for scoring
            setattr(case_run, name, value)
        case_run.status = status
    verdict = _score_before_finish(case_run, status, sink) if score_inline else None
    with transaction.atomic():
        finished = case_finish(
            case_run_id=case_run.pk, attempt=attempt, status=status, fields={**fields, **(verdict.fields if verdict else {})}
        )
        if finished and verdict is not None and verdict.document is not None:
            scoring.case_score_upsert(case_run=case_run, document=verdict.document)
        # a lost claim's events are kept; a finished case's batch reserves its sequence numbers
        # with the statement that locks the lane row for the dispatch below and reads its state
        lane_row = sink.flush(
            extra=verdict.events if finished and verdict is not None else None, returning=lane_state_columns() if finished else ""
        )
        # refill the lane in the same transaction (its row is locked already): no transaction of its own
        maybe_done = lane_refill(case_run.lane_id, lane_row) if finished else None
    if not finished:
        logger.info("case run %s attempt %s lost its claim; result dropped", case_run.pk, attempt)
        return "superseded"
    case_after_finish(
        case_run_id=case_run.pk,
        lane_id=case_run.lane_id,
        run_id=case_run.run_id,
        status=status,
        scored_here=case_run if score_inline and verdict is None else None,
        events=sink.stored,
        scored=verdict is not None,
        maybe_done=maybe_done,
    )
    return str(status)

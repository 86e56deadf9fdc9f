"""One attempt at a case: what the engine call needs, the call, what watches it, and what it produced.

One function per concern: the case and its challenge (from the cached manifest), the provider
(with its resolved credential), the sandbox (with its staged files), the toolset, the engine
request, the post-execution verification. A step that cannot go on raises :class:`_AttemptFailed`;
:func:`native_attempt_run` turns it into a failed :class:`CaseAttempt` and reports it the way the
engine reports its own failures (a ``system.run.failed`` event), since the engine never ran.

What the attempt runs under is here too, each the attempt's own: its pulse on the process's
ticker (:class:`AttemptPulse`: heartbeat and timed event flush, for a hosted attempt as well),
its wall-clock deadline and cancel watch (:class:`CaseDeadline`), and the peer standings a
race-context run tells its agent (:func:`race_standings_source`).
"""

from __future__ import annotations

import contextlib
import ctypes
import dataclasses
import logging
import os
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from django.conf import settings
from django.db import connection
from django.db.models import Count, Q
from django.utils import timezone

from artifacts.selectors import AssetUnavailable
from engine.events import SYSTEM_RUN_FAILED, EventEmitter
from engine.modes import CaseOutcome, CaseRequest, run_case
from engine.modes.case import (
    COMPLETED,
    FAILED,
    MULTI_TURN,
    PROMPT_EVAL,
    RESPONSES,
    STOP_DEADLINE_EXCEEDED,
    STOP_PROVIDER_ERROR,
    STOP_QUOTA_EXCEEDED,
    STOP_SANDBOX_ERROR,
    STOP_SIMULATOR_ERROR,
)
from engine.modes.case import Limits as CaseLimits  # the engine's limits, not a provider account's
from engine.modes.race import StandingsSource
from engine.providers import create_provider
from engine.providers.errors import CREDENTIAL_UNAVAILABLE, UNSUPPORTED_CAPABILITY, UNSUPPORTED_PROVIDER
from engine.providers.registry import API_CHAT, API_RESPONSES
from engine.sandbox import IsolationUnavailableError, SandboxConfig, SandboxConfigError, SandboxSettings, create_sandbox
from engine.scoring.security import SecurityPolicy
from engine.scoring.security_monitor import SecurityMonitor
from engine.scoring.spec import EvaluationSpec
from engine.scoring.verification import run_post_execution
from engine.tools import ToolsetError, build_toolset
from engine.tools.composed import secret_keys_used
from engine.types import JSON, CancelCheck, EventSink, JSONObject, Provider, Sandbox
from infrastructure.sandbox_layers import sandbox_prepare
from runs.events import RunEventSink
from runs.models import CASE_TERMINAL, LANE_TERMINAL, CaseRun, CaseStatus, Lane, LaneStatus, RunStatus
from runs.pipeline.context import CaseContext
from runs.throttle import throttled
from runs.ticker import TICKER, Job
from secrets_app.selectors import secret_allowed_hosts
from secrets_app.services import CredentialUnavailable, credential_resolve
from workspaces.models import Workspace

logger = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True)
class CaseAttempt:
    """What one attempt produced; ``retryable``: another attempt may succeed (spec runtime.md §4.3)."""

    outcome: CaseOutcome
    retryable: bool
    verification: dict[str, JSON] = dataclasses.field(default_factory=dict)


class _AttemptFailed(Exception):
    def __init__(self, stop_reason: str, error: str, *, retryable: bool = False, code: str | None = None, provider_key: str = ""):
        super().__init__(error)
        self.stop_reason, self.error, self.retryable, self.code, self.provider_key = stop_reason, error, retryable, code, provider_key


def attempt_failed(
    emitter: EventEmitter, stop_reason: str, error: str, *, retryable: bool = False, code: str | None = None, provider_key: str = ""
) -> CaseAttempt:
    """A failure the worker met around the engine, reported the way the engine reports its own."""
    failure: JSONObject | None = {"provider_key": provider_key, "code": code, "retryable": retryable, "message": error} if code else None
    payload: dict[str, JSON] = {"error": error, "stop_reason": stop_reason, "step_index": 0}
    if failure:
        payload["provider_failure"] = failure
    emitter.emit(SYSTEM_RUN_FAILED, payload)
    outcome = CaseOutcome(status=FAILED, stop_reason=stop_reason, error=error, provider_failure=failure)
    return CaseAttempt(outcome=outcome, retryable=retryable)


PROVIDER_CONFIG_INVALID = "provider_config_invalid"
# Provider failures that say the lane's deployment cannot work at all, whatever the case: the
# lane's other cases are not run to fail the same way (runs/pipeline/advance.py ``lane_fail_fast``).
CONFIGURATION_FAILURES = frozenset({PROVIDER_CONFIG_INVALID, CREDENTIAL_UNAVAILABLE, UNSUPPORTED_PROVIDER, UNSUPPORTED_CAPABILITY})


def configuration_failure(result: CaseAttempt) -> str | None:
    """The error of an attempt that failed because its lane's deployment cannot work (None otherwise)."""
    outcome = result.outcome
    failure = outcome.provider_failure or {}
    if outcome.stop_reason == STOP_PROVIDER_ERROR and failure.get("code") in CONFIGURATION_FAILURES:
        return str(failure.get("message") or outcome.error or failure.get("code"))
    return None


def engine_retryable(outcome: CaseOutcome) -> bool:
    """Sandbox errors, and provider failures the provider marked retryable (spec runtime.md §4.3)."""
    if outcome.status != FAILED:
        return False
    if outcome.stop_reason == STOP_SANDBOX_ERROR:
        return True
    return outcome.stop_reason == STOP_PROVIDER_ERROR and bool((outcome.provider_failure or {}).get("retryable"))


def security_monitor(ctx: CaseContext, sink: EventSink, policy: SecurityPolicy) -> SecurityMonitor:
    """The sink the engine writes to for a security pack: findings recorded as events go by."""
    return SecurityMonitor(sink, policy, prefix=ctx.prefix + ":security", case_key=ctx.case_run.case_key, secrets=ctx.secrets)


def _provider(ctx: CaseContext) -> Provider:
    case_run, inputs, lane = ctx.case_run, ctx.inputs, ctx.lane
    account = lane.provider_account_snapshot
    try:
        api_key = credential_resolve(
            workspace=ctx.workspace, reference=account.get("credential_reference") or "", secrets=dict(ctx.secrets)
        )
    except CredentialUnavailable as exc:
        raise _AttemptFailed(STOP_PROVIDER_ERROR, str(exc), code=CREDENTIAL_UNAVAILABLE, provider_key=lane.provider_key) from None
    try:
        return create_provider(
            lane.provider_key,
            api_key=api_key,
            base_url=account.get("base_url") or None,
            deployment_config=lane.deployment_config,
            # A regression case is its source case run again: the provider sees the source's key.
            case_key=str(inputs.case.get("case_key") or case_run.case_key) if case_run.regression_case_id else case_run.case_key,
            case_inputs=inputs.case.get("inputs"),
            trial=case_run.trial - 1,  # the engine counts trials from 0 (a run without repeats plays draw 0)
            api=API_RESPONSES if ctx.mode == RESPONSES else API_CHAT,  # docs/responses-mode.md
            allow_private_urls=settings.ALLOW_PRIVATE_PROVIDER_URLS,  # the pinned transport's address rule
        )
    except Exception as exc:  # noqa: BLE001 - an adapter that refuses the deployment's configuration: not retried, the lane fails fast
        message = f"the deployment's provider could not be built from its configuration: {type(exc).__name__}: {exc}"[:1000]
        raise _AttemptFailed(STOP_PROVIDER_ERROR, message, code=PROVIDER_CONFIG_INVALID, provider_key=lane.provider_key) from None


def _simulator(ctx: CaseContext) -> tuple[Provider | None, str]:
    """The provider and model of the deployment chosen at run creation to play llm user-simulator phases."""
    case_run = ctx.case_run
    snapshot = case_run.run.simulator_snapshot
    if ctx.mode != MULTI_TURN or not isinstance(snapshot, dict):
        return None, ""
    deployment, account = snapshot.get("deployment") or {}, snapshot.get("provider_account") or {}
    provider_key = str(account.get("provider_key") or "")
    try:
        api_key = credential_resolve(
            workspace=ctx.workspace, reference=account.get("credential_reference") or "", secrets=dict(ctx.secrets)
        )
    except CredentialUnavailable as exc:
        raise _AttemptFailed(STOP_SIMULATOR_ERROR, f"user simulator ({provider_key}): {exc}") from None
    provider = create_provider(
        provider_key,
        api_key=api_key,
        base_url=account.get("base_url") or None,
        deployment_config=deployment.get("deployment_config") or {},
        case_key=case_run.case_key,
        trial=case_run.trial - 1,
        allow_private_urls=settings.ALLOW_PRIVATE_PROVIDER_URLS,
    )
    return provider, str(deployment.get("model") or "")


def _limited(
    ctx: CaseContext, request: CaseRequest, emitter: EventEmitter, check: CancelCheck, *, provider: Provider, simulator: Provider | None
) -> tuple[Provider, Provider | None]:
    """The lane's provider and the user simulator behind their accounts' shared limits (runs/throttle/).

    A throttled call waits at most until the engine's run deadline, and stops waiting on a cancel.
    """
    run_timeout = CaseLimits.from_request(request).run_timeout_seconds or NO_DEADLINE_SECONDS
    case_run = ctx.case_run
    account_id = case_run.lane.provider_account_snapshot.get("id")
    provider = throttled(provider, account_id=account_id, emit=emitter.emit, run_timeout_seconds=run_timeout, cancel=check)
    snapshot = case_run.run.simulator_snapshot
    if simulator is not None and isinstance(snapshot, dict):
        simulator_account = (snapshot.get("provider_account") or {}).get("id")
        simulator = throttled(simulator, account_id=simulator_account, emit=emitter.emit, run_timeout_seconds=run_timeout, cancel=check)
    return provider, simulator


@contextlib.contextmanager
def _sandbox(ctx: CaseContext) -> Iterator[Sandbox | None]:
    """The case's sandbox with its files staged (none for ``prompt_eval``), destroyed afterwards."""
    case_run = ctx.case_run
    if ctx.mode == PROMPT_EVAL:
        yield None
        return
    sandbox = None
    try:
        try:
            config = SandboxConfig.from_manifest(ctx.pack.manifest, case_run.lane.runtime_profile_snapshot.get("sandbox") or None)
            config.apply_operator_network(settings.SANDBOX_NETWORK, settings.SANDBOX_PRIVATE_ALLOWLIST)
            if config.packages or config.template_id:  # packages and template paths, built outside the sandbox
                sandbox_prepare(config)
            os.makedirs(settings.SANDBOX_ROOT, exist_ok=True)
            sandbox = create_sandbox(config, base_dir=str(settings.SANDBOX_ROOT), settings=SandboxSettings.from_settings(settings))
            sandbox.stage_files(ctx.staged_files)
        except (SandboxConfigError, IsolationUnavailableError) as exc:
            raise _AttemptFailed(STOP_SANDBOX_ERROR, f"sandbox unavailable: {exc}") from None
        except AssetUnavailable as exc:  # a retry would not bring the artifact back
            raise _AttemptFailed(STOP_SANDBOX_ERROR, f"staging assets failed: {exc}") from None
        except Exception as exc:  # noqa: BLE001 - any other setup failure is a (retryable) sandbox error
            logger.warning("sandbox setup failed for case run %s: %s", case_run.pk, exc)
            raise _AttemptFailed(STOP_SANDBOX_ERROR, f"sandbox setup failed: {type(exc).__name__}", retryable=True) from None
        yield sandbox
    finally:
        if sandbox is not None:
            try:
                sandbox.destroy()
            except Exception:
                logger.exception("destroying the sandbox of case run %s failed", case_run.pk)


def _toolset(ctx: CaseContext, sandbox: Sandbox, *, sink: EventSink, cancel: CancelCheck) -> Any:
    case_run, manifest = ctx.case_run, ctx.pack.manifest
    try:
        return build_toolset(
            manifest,
            sandbox=sandbox,
            secrets=dict(ctx.secrets),
            deployment_config=case_run.lane.deployment_config,
            event_sink=sink,
            cancel_check=cancel,
            run_id=str(case_run.run_id),
            lane_id=str(case_run.lane_id),
            case_key=case_run.case_key,
            # where each secret may be sent (docs/secrets.md); read only for packs whose tools use secrets
            secret_hosts=secret_allowed_hosts(workspace=Workspace(pk=case_run.run.workspace_id))
            if ctx.secrets and secret_keys_used(manifest)
            else {},
        )
    except ToolsetError as exc:
        raise _AttemptFailed(STOP_SANDBOX_ERROR, f"tool registry: {exc}") from None


def _verify(ctx: CaseContext, sandbox: Sandbox, emitter: EventEmitter) -> dict[str, JSON]:
    """The evaluation spec's post-execution captures of the sandbox the agent left behind, then its
    test commands in that sandbox restarted fresh, with the pack's staged files read-only
    (docs/scoring.md, "Verification")."""
    spec = ctx.evaluation_spec
    validators = spec.get("validators") or []
    if not spec.get("post_execution_checks") and not any(isinstance(v, dict) and v.get("type") == "code_execution" for v in validators):
        return {}
    try:
        result = run_post_execution(spec, sandbox, ctx.inputs.case, checker_files=ctx.staged_files)
    except Exception:
        logger.exception("post-execution verification failed")
        return {}
    events = result.pop("events", None)
    for event in events if isinstance(events, list) else []:
        payload = event.get("payload") if isinstance(event, dict) else None
        if isinstance(event, dict) and isinstance(event.get("event_type"), str):
            emitter.emit(str(event["event_type"]), payload if isinstance(payload, dict) else {})
    return result


def native_attempt_run(ctx: CaseContext, *, sink: EventSink, emitter: EventEmitter, events: RunEventSink) -> CaseAttempt:
    """Run the claimed case through the engine once, under its pulse (``events``: the attempt's
    event store, flushed on time). Raises only for a bug (the caller's worker error)."""
    with AttemptPulse.of(ctx, events):
        return _native_attempt(ctx, sink=sink, emitter=emitter, events=events)


def _native_attempt(ctx: CaseContext, *, sink: EventSink, emitter: EventEmitter, events: RunEventSink | None = None) -> CaseAttempt:
    case_run = ctx.case_run
    guard: CaseDeadline | None = None
    try:
        provider = _provider(ctx)
        simulator, simulator_model = _simulator(ctx)
        request = ctx.request(simulator_model=simulator_model)
        with _sandbox(ctx) as sandbox:
            # The per-case wall-clock deadline and the cancel watch (:class:`CaseDeadline`):
            # `check` is the engine's cancel check.
            abort = getattr(sandbox, "abort", None)
            guard = CaseDeadline.for_attempt(request, ctx.evaluation_spec, case_run_id=case_run.pk, attempt=ctx.attempt, abort=abort)
            guard.events = events  # its spent byte budget stops the case too (stop reason quota_exceeded)
            with guard as check:
                provider, simulator = _limited(ctx, request, emitter, check, provider=provider, simulator=simulator)
                toolset = None if sandbox is None else _toolset(ctx, sandbox, sink=sink, cancel=check)
                outcome = run_case(
                    request,
                    provider=provider,
                    toolset=toolset,
                    event_sink=sink,
                    cancel_check=check,
                    simulator=simulator,
                    standings=race_standings_source(case_run),  # None unless the run has race context on
                )
                if isinstance(sink, SecurityMonitor) and sandbox is not None:
                    # Leaks in files the agent left behind (staged files it did not change are skipped).
                    sink.scan_workspace(sandbox, staged=ctx.staged_files)
                # Last: code checks restart the sandbox fresh, without the agent's workspace.
                verification = _verify(ctx, sandbox, emitter) if sandbox is not None and outcome.status == COMPLETED else {}
            outcome = _deadline_after_engine(outcome, check, emitter)
            outcome = _quota_after_engine(outcome, events, emitter)
    except _AttemptFailed as failure:
        return attempt_failed(
            emitter, failure.stop_reason, failure.error, retryable=failure.retryable, code=failure.code, provider_key=failure.provider_key
        )
    except CaseDeadlineExceeded:
        deadline = guard.seconds if guard is not None else 0.0
        logger.error("case run %s ignored its deadline of %gs and was interrupted", case_run.pk, deadline)
        message = f"the case exceeded its wall-clock deadline of {deadline:g}s and was interrupted by the worker"
        return attempt_failed(emitter, STOP_DEADLINE_EXCEEDED, message)
    return CaseAttempt(outcome=outcome, retryable=engine_retryable(outcome), verification=verification)


def _deadline_after_engine(outcome: CaseOutcome, check: CaseDeadline, emitter: EventEmitter) -> CaseOutcome:
    """A case the engine completed but whose verification ran past the deadline fails too."""
    if not check.fired.is_set() or outcome.status != COMPLETED:
        return outcome
    error = check.stop_message + " during post-execution verification"
    emitter.emit(SYSTEM_RUN_FAILED, {"error": error, "stop_reason": STOP_DEADLINE_EXCEEDED, "step_index": outcome.step_count})
    return dataclasses.replace(outcome, status=FAILED, stop_reason=STOP_DEADLINE_EXCEEDED, error=error, final_output=None)


def _quota_after_engine(outcome: CaseOutcome, events: RunEventSink | None, emitter: EventEmitter) -> CaseOutcome:
    """A case that spent its stored-bytes budget fails with ``quota_exceeded``, even when the
    engine completed it first (the budget was spent by its last events)."""
    if events is None or not events.quota_stop or outcome.stop_reason == STOP_QUOTA_EXCEEDED:
        return outcome
    if outcome.status != COMPLETED:  # it failed or was stopped for another reason first
        return outcome
    error = events.quota_stop
    emitter.emit(SYSTEM_RUN_FAILED, {"error": error, "stop_reason": STOP_QUOTA_EXCEEDED, "step_index": outcome.step_count})
    return dataclasses.replace(outcome, status=FAILED, stop_reason=STOP_QUOTA_EXCEEDED, error=error, final_output=None)


# -- the attempt's pulse ----------------------------------------------------------------------


class AttemptPulse:
    """The attempt's pulse: one job on the process's ticker thread (runs/ticker.py: no thread per
    case), from the attempt's start to its end, native or hosted (:meth:`of`, a context manager).

    Each tick writes the sink's events that waited ``RUNS_EVENT_FLUSH_SECONDS`` (a long tool or
    model call's events are stored while it runs, and a worker killed mid-call loses at most one
    interval), and every ``heartbeat_seconds`` it touches ``CaseRun.heartbeat_at``, so the reaper
    can tell a live case from an abandoned one. Inside a transaction (tests) the events are left
    to the main thread: the ticker's own connection would wait on its locks and could not see its
    uncommitted rows.
    """

    def __init__(self, case_run_id: int, attempt: int, sink: RunEventSink, *, heartbeat_seconds: float) -> None:
        self.case_run_id, self.attempt, self.sink = case_run_id, attempt, sink
        self.heartbeat_seconds = heartbeat_seconds
        self.next_beat = time.monotonic() + heartbeat_seconds  # the claim set the first one
        self.flush_on_time = sink.interval > 0 and not connection.in_atomic_block
        self.job: Job | None = None

    @classmethod
    def of(cls, ctx: CaseContext, events: RunEventSink) -> AttemptPulse:
        """The pulse of the context's attempt, writing ``events`` on time (started by ``with``)."""
        return cls(ctx.case_run.pk, ctx.attempt, events, heartbeat_seconds=settings.RUNS_HEARTBEAT_SECONDS)

    def __enter__(self) -> AttemptPulse:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def tick(self) -> None:
        try:
            if self.flush_on_time:
                self.sink.flush_due()  # a failure is logged; the main thread's next flush writes the events
        finally:
            if time.monotonic() >= self.next_beat:
                self.next_beat = time.monotonic() + self.heartbeat_seconds
                CaseRun.objects.filter(pk=self.case_run_id, attempt=self.attempt, status=CaseStatus.RUNNING).update(
                    heartbeat_at=timezone.now()
                )

    def start(self) -> AttemptPulse:
        period = min(self.sink.interval, self.heartbeat_seconds) if self.flush_on_time else self.heartbeat_seconds
        self.job = TICKER.add(self.tick, period, name=f"attempt-{self.case_run_id}-{self.attempt}")
        return self

    def stop(self) -> None:
        """Stop ticking, waiting for a tick in progress (events still buffered are written by the next flush)."""
        if self.job is not None:
            TICKER.remove(self.job)
            self.job = None


# -- the deadline ----------------------------------------------------------------------------
#
# When an attempt stops: the cancel check the engine reads, and the per-case wall-clock deadline
# enforced from outside the engine (docs/runs.md, Limits). One job on the ticker per attempt, next
# to its pulse's.
#
# The engine stops itself at its run deadline, but it looks at the clock only between steps and
# tool calls. A case that hangs inside one — a provider that ignores its timeout, a tool process
# the sandbox did not stop, a verification command — would run on until Celery's time limit
# kills the whole worker process. :class:`CaseDeadline` bounds it from the process's ticker thread:
#
# 1. when the deadline passes, the cancel check it hands the engine says stop, with the stop
#    reason ``deadline_exceeded`` (the engine's cancel path, so the case ends the normal way),
#    and the sandbox's running process is aborted;
# 2. if the case has still not come back ``hard_grace`` seconds later, the watchdog raises
#    :class:`CaseDeadlineExceeded` in the thread running the case. It arrives at that thread's
#    next Python instruction (a thread blocked inside one C call gets it when the call returns),
#    so only a hang inside native code is left to Celery's time limit.

# The engine's own run deadline comes first; the watchdog allows this much more (provider
# retries, sandbox teardown of the last tool call) before it steps in.
DEADLINE_GRACE_SECONDS = 30.0
# A case with no run deadline at all still ends: below Celery's soft time limit (25 min).
NO_DEADLINE_SECONDS = 20 * 60.0
# How long the cooperative stop may take before the watchdog interrupts the case's thread.
HARD_STOP_GRACE_SECONDS = 10.0
# How often a running case is checked for a cancel or a re-claim (to abort its sandbox's process).
WATCH_SECONDS = 0.5
CODE_EXECUTION_TIMEOUT_MS = 30_000  # the validator's default (runtime.md §5.4)


class CaseCancelCheck:
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

    def watch(self) -> bool:
        """From the ticker thread: whether the case was visibly cancelled or re-claimed (a row this
        thread's connection cannot see yet is not a cancel)."""
        row = CaseRun.objects.filter(pk=self.case_run_id).values_list("attempt", "run__status").first()
        return row is not None and (row[0] != self.attempt or row[1] != RunStatus.RUNNING)


class CaseDeadlineExceeded(BaseException):
    """Raised in the case's thread when it ignored the cooperative stop. A BaseException, so the
    engine's "never raise" handlers (which catch Exception) do not swallow it."""


def _timeout_ms(config: object) -> float | None:
    value = config.get("timeout_ms") if isinstance(config, dict) else None
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def case_deadline_seconds(request: CaseRequest, evaluation_spec: EvaluationSpec) -> float:
    """The engine's run deadline plus the post-execution verification's timeouts plus a grace."""
    run_timeout = CaseLimits.from_request(request).run_timeout_seconds or NO_DEADLINE_SECONDS
    verification_ms = sum(
        float(_timeout_ms(v.get("config")) or CODE_EXECUTION_TIMEOUT_MS)
        for v in evaluation_spec.get("validators") or []
        if isinstance(v, dict) and v.get("type") == "code_execution"
    )
    return run_timeout + verification_ms / 1000 + DEADLINE_GRACE_SECONDS


class CaseDeadline:
    """A cancel check for the engine that also says stop once ``seconds`` have passed.

    Use as a context manager around the engine call, in the thread that makes it::

        with CaseDeadline(seconds, cancel=cancel, abort=sandbox.abort) as check:
            run_case(..., cancel_check=check)
    """

    def __init__(
        self,
        seconds: float,
        *,
        cancel: CancelCheck,
        abort: Callable[[], None] | None = None,
        hard_grace: float | None = None,
        watch: Callable[[], bool] | None = None,
    ) -> None:
        self.seconds, self.cancel, self.abort, self.watch = seconds, cancel, abort, watch
        self.hard_grace = HARD_STOP_GRACE_SECONDS if hard_grace is None else hard_grace
        self.fired = threading.Event()
        self._lock = threading.Lock()
        self._exited = False
        self._interrupted = False
        self._aborted = False
        self._target: int | None = None
        self._started = 0.0
        self._fired_at = 0.0
        self._job: Job | None = None
        self.events: RunEventSink | None = None  # the attempt's event store: a spent byte budget says stop

    @classmethod
    def for_attempt(
        cls, request: CaseRequest, spec: EvaluationSpec, *, case_run_id: int, attempt: int, abort: Callable[[], None] | None
    ) -> CaseDeadline:
        """A native attempt's deadline (:func:`case_deadline_seconds`), with its cancel check and,
        when there is a sandbox to abort, the watch that aborts its running process within ~0.5 s
        of a cancel or a re-claim (the engine checks ``cancel`` only between steps and tool calls)."""
        cancel = CaseCancelCheck(case_run_id, attempt)
        return cls(case_deadline_seconds(request, spec), cancel=cancel, abort=abort, watch=cancel.watch if abort else None)

    # -- the cancel check the engine reads (engine.modes.case.cancel_stop) -----------------------

    def __call__(self) -> bool:
        return self.fired.is_set() or self._quota_spent() or self.cancel()

    def _quota_spent(self) -> bool:
        return self.events is not None and bool(self.events.quota_stop)

    @property
    def stop_reason(self) -> str:
        if self.fired.is_set():
            return STOP_DEADLINE_EXCEEDED
        return STOP_QUOTA_EXCEEDED if self._quota_spent() else ""

    @property
    def stop_message(self) -> str:
        if not self.fired.is_set() and self.events is not None and self.events.quota_stop:
            return self.events.quota_stop
        return f"the case exceeded its wall-clock deadline of {self.seconds:g}s (stopped by the worker)"

    # -- the watchdog ------------------------------------------------------------------------

    def __enter__(self) -> CaseDeadline:
        self._target = threading.get_ident()
        self._started = time.monotonic()
        # One job on the process's ticker for the deadline, the hard stop and the cancel watch.
        period = min(WATCH_SECONDS, self.seconds, self.hard_grace)
        self._job = TICKER.add(self._tick, period, name=f"case-deadline-{self._target}")
        return self

    def __exit__(self, *exc: object) -> None:
        with self._lock:
            self._exited = True
        if self._job is not None:  # waits for a tick in progress, as joining the watchdog did
            TICKER.remove(self._job)
            self._job = None

    def _tick(self) -> None:
        now = time.monotonic()
        if not self.fired.is_set() and now - self._started >= self.seconds:
            self._fire(now)
        elif self.fired.is_set() and now - self._fired_at >= self.hard_grace:
            self._interrupt()
        elif self.watch is not None and not self._aborted and not self.fired.is_set() and self.watch():
            self._aborted = True
            self._abort()

    def _fire(self, now: float) -> None:
        """The deadline passed: say stop, and abort the sandbox's running process."""
        with self._lock:
            if self._exited or self.fired.is_set():
                return
            self._fired_at = now
            self.fired.set()
        logger.warning("case deadline of %gs passed; stopping the case", self.seconds)
        self._abort()

    def _abort(self) -> None:
        if self.abort is not None:
            try:
                self.abort()
            except Exception:
                logger.exception("aborting the sandbox of a case failed")

    def _interrupt(self) -> None:
        with self._lock:
            # Under the lock: once __exit__ has marked the block left, nothing is raised any more.
            if not self._exited and not self._interrupted and self._target is not None:
                self._interrupted = True  # once (the ticker calls again every period)
                logger.error("case did not stop %gs after its deadline; interrupting its thread", self.hard_grace)
                ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(self._target), ctypes.py_object(CaseDeadlineExceeded))


# -- race context ----------------------------------------------------------------------------
#
# Race context, the runs side: the peer standings a lane's agent is told between steps.
#
# The engine only calls a function that returns text (``engine/modes/race.py`` decides when); the
# attempt builds that function for a case run whose run has ``race_context`` on. The text comes from
# the database at call time, one aggregate query: for every *other* lane, how many of its cases have
# finished and how many of those passed (a case counts as passed once it is scored). Lanes are named
# by letter (lane index 0 = A) and label, as on the run page.


def lane_letter(lane_index: int) -> str:
    letters = ""
    index = lane_index
    while True:
        letters = chr(ord("A") + index % 26) + letters
        index = index // 26 - 1
        if index < 0:
            return letters


def _lane_line(row: Mapping[str, Any]) -> str:
    name = f"lane {lane_letter(row['lane_index'])} ({row['label']})"
    if row["done"] == 0 and row["status"] not in LANE_TERMINAL:
        return f"{name} has not finished a case yet (0/{row['total']})"
    line = f"{name} has finished {row['done']}/{row['total']} cases, {row['passed']} passed"
    if row["status"] in (LaneStatus.FAILED, LaneStatus.CANCELLED):
        line += f" (lane {row['status']})"
    return line


def standings_text(*, run_id: int, lane_id: int) -> str:
    """How the run's other lanes stand, in one line; "" when the run has no other lane."""
    rows = (
        Lane.objects.filter(run_id=run_id)
        .exclude(pk=lane_id)
        .annotate(
            total=Count("case_runs"),
            done=Count("case_runs", filter=Q(case_runs__status__in=CASE_TERMINAL)),
            passed=Count("case_runs", filter=Q(case_runs__passed=True)),
        )
        .order_by("lane_index")
        .values("lane_index", "label", "status", "total", "done", "passed")
    )
    lines = [_lane_line(row) for row in rows]
    return "; ".join(lines) + "." if lines else ""


def race_standings_source(case_run: CaseRun) -> StandingsSource | None:
    """The engine's standings source for this case run, or None when the run has race context off."""
    if not case_run.run.race_context:
        return None
    run_id, lane_id = case_run.run_id, case_run.lane_id

    def standings() -> str:
        return standings_text(run_id=run_id, lane_id=lane_id)

    return standings

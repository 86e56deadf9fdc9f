"""One attempt at a case: what the engine call needs, the call, and what it produced.

One function per concern: the case and its challenge (from the cached manifest), the provider
(with its resolved credential), the sandbox (with its staged files), the toolset, the engine
request, the post-execution verification. A step that cannot go on raises :class:`_AttemptFailed`;
:func:`case_attempt_run` turns it into a failed :class:`CaseAttempt` and reports it the way the
engine reports its own failures (a ``system.run.failed`` event), since the engine never ran.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import os
from collections.abc import Iterator
from typing import Any

from django.conf import settings

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
    STOP_SANDBOX_ERROR,
    STOP_SIMULATOR_ERROR,
)
from engine.modes.case import Limits as CaseLimits  # the engine's limits, not a provider account's
from engine.providers import create_provider
from engine.providers.errors import CREDENTIAL_UNAVAILABLE
from engine.providers.registry import API_CHAT, API_RESPONSES
from engine.sandbox import IsolationUnavailableError, SandboxConfig, SandboxConfigError, SandboxSettings, create_sandbox
from engine.scoring.security import SecurityPolicy
from engine.scoring.security_monitor import SecurityMonitor
from engine.scoring.verification import run_post_execution
from engine.tools import ToolsetError, build_toolset
from engine.tools.composed import secret_keys_used
from engine.types import JSON, CancelCheck, EventSink, JSONObject, Provider, Sandbox
from runs.pipeline.context import CaseContext
from runs.pipeline.deadline import NO_DEADLINE_SECONDS, CaseDeadline, CaseDeadlineExceeded
from runs.pipeline.race import race_standings_source
from runs.throttle import throttled
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


def engine_retryable(outcome: CaseOutcome) -> bool:
    """Sandbox errors, and provider failures the provider marked retryable (spec runtime.md §4.3)."""
    if outcome.status != FAILED:
        return False
    if outcome.stop_reason == STOP_SANDBOX_ERROR:
        return True
    return outcome.stop_reason == STOP_PROVIDER_ERROR and bool((outcome.provider_failure or {}).get("retryable"))


def security_monitor(ctx: CaseContext, sink: EventSink, policy: SecurityPolicy) -> SecurityMonitor:
    """The sink the engine writes to for a security pack: findings recorded as events go by."""
    return SecurityMonitor(sink, policy, prefix=ctx.prefix + ":security", case_key=ctx.case_run.case_key)


def _provider(ctx: CaseContext) -> Provider:
    case_run, inputs, lane = ctx.case_run, ctx.inputs, ctx.lane
    account = lane.provider_account_snapshot
    try:
        api_key = credential_resolve(
            workspace=ctx.workspace, reference=account.get("credential_reference") or "", secrets=dict(ctx.secrets)
        )
    except CredentialUnavailable as exc:
        raise _AttemptFailed(STOP_PROVIDER_ERROR, str(exc), code=CREDENTIAL_UNAVAILABLE, provider_key=lane.provider_key) from None
    return create_provider(
        lane.provider_key,
        api_key=api_key,
        base_url=account.get("base_url") or None,
        deployment_config=lane.deployment_config,
        # A regression case is its source case run again: the provider sees the source's key.
        case_key=str(inputs.case.get("case_key") or case_run.case_key) if case_run.regression_case_id else case_run.case_key,
        case_inputs=inputs.case.get("inputs"),
        api=API_RESPONSES if ctx.mode == RESPONSES else API_CHAT,  # docs/responses-mode.md
        allow_private_urls=settings.ALLOW_PRIVATE_PROVIDER_URLS,  # the pinned transport's address rule
    )


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


def native_attempt_run(ctx: CaseContext, *, sink: EventSink, emitter: EventEmitter) -> CaseAttempt:
    """Run the claimed case through the engine once. Raises only for a bug (the caller's worker error)."""
    case_run = ctx.case_run
    guard: CaseDeadline | None = None
    try:
        provider = _provider(ctx)
        simulator, simulator_model = _simulator(ctx)
        request = ctx.request(simulator_model=simulator_model)
        with _sandbox(ctx) as sandbox:
            # The per-case wall-clock deadline and the cancel watch (runs/pipeline/deadline.py):
            # `check` is the engine's cancel check.
            abort = getattr(sandbox, "abort", None)
            guard = CaseDeadline.for_attempt(request, ctx.evaluation_spec, case_run_id=case_run.pk, attempt=ctx.attempt, abort=abort)
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

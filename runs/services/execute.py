"""``case_run_execute``: one lane × case, from claim to recorded result (spec runtime.md §3, §4.3)."""

from __future__ import annotations

import datetime as dt
import logging
import os
import threading
import time
from typing import Any

from django.conf import settings
from django.db import connection
from django.utils import timezone

from engine.events import EventEmitter
from engine.modes import CaseOutcome, CaseRequest, run_case
from engine.redact import Redactor
from engine.types import Usage
from runs.lifecycle import case_claim, case_finish
from runs.models import CaseRun, CaseStatus, Run, RunStatus
from runs.queue import enqueue_on_commit
from runs.services.events import RunEventSink
from runs.services.staging import challenge_for, engine_case, staged_files

logger = logging.getLogger(__name__)

MAX_ATTEMPTS = 3
# Pack versions are immutable, so a worker keeps their manifests (and a case index) in memory.
_manifests: dict[tuple[int, str | None], tuple[dict[str, Any], dict[tuple[str, str], dict[str, Any]]]] = {}


def _setting(name: str, default: float) -> float:
    return float(getattr(settings, name, default))


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


class Heartbeat(threading.Thread):
    """Touches ``CaseRun.heartbeat_at`` so the reaper can tell a live case from an abandoned one."""

    def __init__(self, case_run_id: int, attempt: int, interval: float) -> None:
        super().__init__(daemon=True, name=f"heartbeat-{case_run_id}")
        self.case_run_id, self.attempt, self.interval = case_run_id, attempt, interval
        self.stopped = threading.Event()

    def run(self) -> None:
        try:
            while not self.stopped.wait(self.interval):
                CaseRun.objects.filter(pk=self.case_run_id, attempt=self.attempt, status=CaseStatus.RUNNING).update(
                    heartbeat_at=timezone.now()
                )
        except Exception:
            logger.exception("heartbeat for case run %s failed", self.case_run_id)
        finally:
            connection.close()

    def stop(self) -> None:
        self.stopped.set()
        self.join(timeout=5)


def credential_resolve(reference: str, secrets: dict[str, str]) -> tuple[str | None, str | None]:
    """(api key, error) for a provider account's ``credential_reference`` (spec runtime.md §7.5).

    Only ``workspace-secret://KEY`` is honoured. The reference's ``env://`` and ``secret://``
    forms would let anyone who can edit a provider account read the worker's environment, so
    they are refused here as they are when an account is saved (docs/secrets.md).
    """
    reference = (reference or "").strip()
    if not reference:
        return None, None
    if reference.startswith("workspace-secret://"):
        key = reference.removeprefix("workspace-secret://").strip()
        value = secrets.get(key)
        return (value, None) if value else (None, f'workspace secret "{key}" not found')
    return None, "unsupported credential reference: use workspace-secret://KEY"


def _manifest(run: Run, checksum: str | None = None) -> tuple[dict[str, Any], dict[tuple[str, str], dict[str, Any]]]:
    from packs.models import PackVersion

    # Versions are immutable, but a primary key can come back after a database is recreated
    # (tests, a reset dev database), so the checksum is part of the cache key.
    if checksum is not None:  # the claim reads it
        pass
    elif Run.pack_version.is_cached(run):
        checksum = run.pack_version.manifest_checksum
    else:
        checksum = PackVersion.objects.filter(pk=run.pack_version_id).values_list("manifest_checksum", flat=True).first()
    cache_key = (run.pack_version_id, checksum)
    cached = _manifests.get(cache_key)
    if cached is None:
        manifest = PackVersion.objects.filter(pk=run.pack_version_id).values_list("manifest", flat=True).first() or {}
        index = {}
        for input_set in manifest.get("input_sets") or []:
            for case in (input_set or {}).get("cases") or []:
                if isinstance(case, dict):
                    index[(input_set.get("key"), case.get("case_key") or case.get("item_key"))] = case
        if len(_manifests) > 32:
            _manifests.clear()
        cached = _manifests[cache_key] = (manifest, index)
    return cached


def _load_secrets(case_run: CaseRun) -> dict[str, str]:
    from secrets_app.services import secrets_resolve_for_run
    from workspaces.models import Workspace

    run = case_run.run
    # Only the workspace's id is needed; the claim does not load the workspace row.
    return secrets_resolve_for_run(workspace=run.workspace if Run.workspace.is_cached(run) else Workspace(pk=run.workspace_id))


def _failed(stop_reason: str, error: str, *, retryable: bool = False, code: str | None = None, provider_key: str = "") -> CaseOutcome:
    failure = {"provider_key": provider_key, "code": code, "retryable": retryable, "message": error} if code else None
    outcome = CaseOutcome(status="failed", stop_reason=stop_reason, error=error, provider_failure=failure)
    outcome.transcript = [{"retryable": retryable}]  # internal marker, never stored
    return outcome


def _run_engine(
    case_run: CaseRun, sink: RunEventSink, cancel: CancelCheck, secrets: dict[str, str], emitter: EventEmitter
) -> tuple[CaseOutcome, dict[str, Any]]:
    from engine.providers import create_provider
    from engine.sandbox import IsolationUnavailableError, SandboxConfig, SandboxConfigError, create_sandbox
    from engine.tools import ToolsetError, build_toolset

    run, lane = case_run.run, case_run.lane
    snapshot = lane.snapshot or {}
    deployment = snapshot.get("deployment") or {}
    account = snapshot.get("provider_account") or {}
    profile = snapshot.get("runtime_profile") or {}
    manifest, index = _manifest(run, getattr(case_run, "pack_checksum", None))
    input_set_key = getattr(case_run, "input_set_key", None) or run.input_set.key
    case = engine_case(manifest, input_set_key, case_run.case, found=index.get((input_set_key, case_run.case_key)))
    challenge = challenge_for(manifest, case.get("challenge_key") or case_run.case.challenge_key)
    deployment_config = dict(deployment.get("deployment_config") or {})
    api_key, credential_error = credential_resolve(account.get("credential_reference") or "", secrets)
    if credential_error:
        return _failed(
            "provider_error", credential_error, code="credential_unavailable", provider_key=account.get("provider_key") or ""
        ), {}
    provider = create_provider(
        account.get("provider_key") or "",
        api_key=api_key,
        base_url=account.get("base_url") or None,
        deployment_config=deployment_config,
        case_key=case_run.case_key,
        case_inputs=case.get("inputs"),
    )
    sandbox = None
    toolset = None
    mode = run.execution_mode or "native"
    try:
        if mode != "prompt_eval":
            try:
                config = SandboxConfig.from_manifest(manifest, profile.get("sandbox") or None)
                os.makedirs(settings.SANDBOX_ROOT, exist_ok=True)
                sandbox = create_sandbox(config, base_dir=str(settings.SANDBOX_ROOT))
                run_context = {
                    "run_id": run.pk,
                    "run_agent_id": lane.pk,
                    "run_name": run.name,
                    "case_key": case_run.case_key,
                    "deployment_config": {k: v for k, v in deployment_config.items() if k not in ("script", "judge_responses")},
                    "runtime_profile": profile,
                }
                sandbox.stage_files(staged_files(manifest=manifest, challenge=challenge, case=case, run_context=run_context))
            except (SandboxConfigError, IsolationUnavailableError) as exc:
                return _failed("sandbox_error", f"sandbox unavailable: {exc}"), {}
            except Exception as exc:  # noqa: BLE001 - any staging failure is a (retryable) sandbox error
                logger.warning("sandbox setup failed for case run %s: %s", case_run.pk, exc)
                return _failed("sandbox_error", f"sandbox setup failed: {type(exc).__name__}", retryable=True), {}
            try:
                toolset = build_toolset(
                    manifest,
                    sandbox=sandbox,
                    secrets=secrets,
                    deployment_config=deployment_config,
                    event_sink=sink,
                    cancel_check=cancel,
                    run_id=str(run.pk),
                    lane_id=str(lane.pk),
                    case_key=case_run.case_key,
                )
            except ToolsetError as exc:
                return _failed("sandbox_error", f"tool registry: {exc}"), {}
        request = CaseRequest(
            execution_mode=mode, run_id=str(run.pk), lane_id=str(lane.pk), case_key=case_run.case_key,
            event_id_prefix=emitter_prefix(case_run), model=deployment.get("model") or snapshot.get("model") or "",
            system_prompt=deployment.get("system_prompt") or "", output_schema=deployment.get("output_schema") or None,
            manifest=manifest, challenge=challenge, case=case, deployment_config=deployment_config,
            runtime_profile={k: profile.get(k) for k in ("max_iterations", "max_tool_calls", "step_timeout_seconds", "run_timeout_seconds")},
        )  # fmt: skip
        outcome = run_case(request, provider=provider, toolset=toolset, event_sink=sink, cancel_check=cancel)
        verification: dict[str, Any] = {}
        spec = manifest.get("evaluation_spec") or {}
        if outcome.status == "completed" and sandbox is not None and isinstance(spec, dict):
            verification = _verify(spec, sandbox, case, emitter)
        return outcome, verification
    finally:
        if sandbox is not None:
            try:
                sandbox.destroy()
            except Exception:
                logger.exception("destroying the sandbox of case run %s failed", case_run.pk)


def _verify(spec: dict[str, Any], sandbox: Any, case: dict[str, Any], emitter: EventEmitter) -> dict[str, Any]:
    from engine.scoring.verification import run_post_execution

    if not spec.get("post_execution_checks") and not any(
        isinstance(v, dict) and v.get("type") == "code_execution" for v in spec.get("validators") or []
    ):
        return {}
    try:
        result = run_post_execution(spec, sandbox, case)
    except Exception:
        logger.exception("post-execution verification failed")
        return {}
    for event in result.pop("events", []) or []:
        emitter.emit(event["event_type"], event.get("payload") or {})
    return result


def emitter_prefix(case_run: CaseRun) -> str:
    return f"{case_run.run.execution_mode or 'native'}:{case_run.lane_id}:{case_run.pk}:{case_run.attempt}"


def _is_retryable(outcome: CaseOutcome) -> bool:
    if outcome.status != "failed":
        return False
    marker = outcome.transcript[0] if outcome.transcript and "retryable" in outcome.transcript[0] else None
    if marker is not None:
        return bool(marker["retryable"])
    if outcome.stop_reason == "sandbox_error":
        return True
    return outcome.stop_reason == "provider_error" and bool((outcome.provider_failure or {}).get("retryable"))


def case_run_execute(
    *, case_run_id: int, retry_of: int | None = None, stale_seconds: float | None = None, score_inline: bool = False
) -> str:
    """Claim and run one case. Returns what happened (for logs and tests); never raises for case problems.

    ``score_inline``: score the finished case here, from the events just written, instead of
    enqueueing ``runs.case_run_finalize`` (the worker task does; it saves a task round trip and
    reading the case back). A case left unscored by a dying worker is re-finalized by the reaper.
    """
    stale_before = timezone.now() - dt.timedelta(seconds=stale_seconds) if stale_seconds else None
    case_run = case_claim(case_run_id=case_run_id, stale_before=stale_before, retry_of=retry_of)
    if case_run is None:
        logger.info("case run %s: already claimed or finished", case_run_id)
        return "skipped"
    if case_run.run.status != RunStatus.RUNNING:
        case_finish(
            case_run_id=case_run.pk,
            attempt=case_run.attempt,
            status=CaseStatus.CANCELLED,
            fields={"stop_reason": "cancelled", "error": f"the run is {case_run.run.status}"},
        )
        return "cancelled"
    attempt = case_run.attempt
    try:
        secrets = _load_secrets(case_run)
    except Exception as exc:
        logger.exception("loading secrets for case run %s failed", case_run.pk)
        secrets, secrets_error = {}, f"could not load workspace secrets: {type(exc).__name__}"
    else:
        secrets_error = None
    redactor = Redactor(secrets.values())
    sink = RunEventSink(
        run_id=case_run.run_id,
        lane_id=case_run.lane_id,
        case_run_id=case_run.pk,
        attempt=attempt,
        redactor=redactor,
        interval=_setting("RUNS_EVENT_FLUSH_SECONDS", 0.5),
        keep=score_inline and attempt == 1,
    )  # later attempts: the evidence spans every attempt
    emitter = EventEmitter(sink, prefix=emitter_prefix(case_run) + ":worker", source="agent_harness_worker", case_key=case_run.case_key)
    cancel = CancelCheck(case_run.pk, attempt)
    heartbeat = Heartbeat(case_run.pk, attempt, _setting("RUNS_HEARTBEAT_SECONDS", 5.0))
    heartbeat.start()
    verification: dict[str, Any] = {}
    try:
        if secrets_error:
            outcome = _failed("provider_error", secrets_error, code="credential_unavailable")
        else:
            outcome, verification = _run_engine(case_run, sink, cancel, secrets, emitter)
        if outcome.status == "failed" and outcome.step_count == 0 and outcome.transcript[:1] and "retryable" in outcome.transcript[0]:
            emitter.emit(
                "system.run.failed",
                {
                    "error": outcome.error,
                    "stop_reason": outcome.stop_reason,
                    "step_index": 0,
                    **({"provider_failure": outcome.provider_failure} if outcome.provider_failure else {}),
                },
            )
    except Exception as exc:
        logger.exception("case run %s crashed", case_run.pk)
        outcome = _failed("sandbox_error", f"worker error: {type(exc).__name__}", retryable=True)
        emitter.emit("system.run.failed", {"error": outcome.error, "stop_reason": "sandbox_error", "step_index": 0})
    finally:
        heartbeat.stop()
    sink.flush()
    return _record(case_run, attempt, outcome, verification, redactor, score_inline=score_inline, events=sink.stored)


def _record(
    case_run: CaseRun,
    attempt: int,
    outcome: CaseOutcome,
    verification: dict[str, Any],
    redactor: Redactor,
    *,
    score_inline: bool = False,
    events: list[dict[str, Any]] | None = None,
) -> str:
    from runs.services.orchestrate import case_after_finish

    if _is_retryable(outcome) and attempt < MAX_ATTEMPTS and outcome.status == "failed":
        delay = _setting("RUNS_RETRY_BACKOFF_SECONDS", 10.0) * (2 ** (attempt - 1))
        CaseRun.objects.filter(pk=case_run.pk, attempt=attempt, status=CaseStatus.RUNNING).update(
            error=redactor.text(outcome.error or "")[:5000], heartbeat_at=timezone.now() + dt.timedelta(seconds=delay)
        )
        enqueue_on_commit("runs.case_run_execute", case_run.pk, attempt, countdown=min(delay, 120.0))
        logger.info("case run %s attempt %s failed (%s); retrying in %.0f s", case_run.pk, attempt, outcome.stop_reason, delay)
        return "retrying"
    usage = outcome.usage or Usage()
    status = {"completed": CaseStatus.COMPLETED, "cancelled": CaseStatus.CANCELLED}.get(outcome.status, CaseStatus.FAILED)
    fields = {
        "stop_reason": outcome.stop_reason or "", "final_output": redactor.text(outcome.final_output) if outcome.final_output is not None else None,
        "error": redactor.text(outcome.error or "")[:5000], "step_count": outcome.step_count, "tool_call_count": outcome.tool_call_count,
        "input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens, "total_tokens": usage.total_tokens,
        "duration_ms": outcome.duration_ms, "verification": redactor.json(verification) if verification else {},
        "provider_failure": redactor.json(outcome.provider_failure) if outcome.provider_failure else None,
    }  # fmt: skip
    if not case_finish(case_run_id=case_run.pk, attempt=attempt, status=status, fields=fields):
        logger.info("case run %s attempt %s lost its claim; result dropped", case_run.pk, attempt)
        return "superseded"
    if score_inline:
        for name, value in fields.items():  # the row as it now is, for scoring
            setattr(case_run, name, value)
        case_run.status = status
    case_after_finish(
        case_run_id=case_run.pk,
        lane_id=case_run.lane_id,
        run_id=case_run.run_id,
        status=status,
        scored_here=case_run if score_inline else None,
        events=events,
    )
    return str(status)

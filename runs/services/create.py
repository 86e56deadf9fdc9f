"""``run_create``: freeze the deployments, judges and simulator, create the run, its lanes and case runs, start it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from django.db import transaction
from django.utils import timezone

from core.actors import actor_or_none
from core.errors import NotFound, full_clean
from engine.providers.registry import RESPONSES_PROVIDER_KEYS
from infrastructure.models import AgentDeployment, LifecycleStatus
from packs.models import Case, InputSet, PackVersion
from regression.selectors import run_regression_resolve
from runs.jobs import RunStart
from runs.models import HOSTED_EXTERNAL, HOSTED_PACK_MODES, CaseRun, Lane, LaneStatus, Run, RunStatus, RunStatusHistory
from runs.pipeline.context import engine_case
from runs.queue import enqueue_on_commit
from runs.services.naming import run_default_name
from runs.services.preflight import run_preflight
from runs.services.resolve import (
    RunCreateError,
    deployment_snapshot,
    judges_resolve,
    needs_simulator,
    simulator_refusal,
    simulator_resolve,
)
from runs.services.trials import repeats_resolve
from secrets_app.selectors import secrets_exist
from workspaces.models import Workspace

__all__ = ["RunCreateError", "deployment_snapshot", "run_create"]

SUPPORTED_MODES = frozenset({"native", "prompt_eval", "multi_turn", "responses"})


def _pack_max_iterations(manifest: dict[str, Any]) -> int | None:
    """``evaluation_spec.runtime_limits.max_iterations`` (or the manifest's) when in 1..1000 (§3.3)."""
    for source in ((manifest.get("evaluation_spec") or {}).get("runtime_limits"), manifest.get("runtime_limits")):
        value = (source or {}).get("max_iterations") if isinstance(source, dict) else None
        if isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= 1000:
            return value
    return None


def _input_set_for(version: PackVersion, input_set_id: Any) -> InputSet:
    sets = list(version.input_sets.all())
    if input_set_id not in (None, ""):
        for candidate in sets:
            if str(candidate.pk) == str(input_set_id):
                return candidate
        raise RunCreateError("That input set does not belong to this pack version: choose one of its input sets.", field="input_set_id")
    if len(sets) == 1:
        return sets[0]
    if not sets:
        raise RunCreateError("This pack version has no input sets, so there is nothing to run.", field="input_set_id")
    raise RunCreateError(f"This pack version has {len(sets)} input sets; choose one.", field="input_set_id")


def _deployments(workspace: Workspace, deployment_ids: Sequence[Any]) -> list[AgentDeployment]:
    if not deployment_ids:
        raise RunCreateError("Choose at least one deployment.", field="deployment_ids")
    wanted: list[int] = []
    for raw in deployment_ids:
        try:
            pk = int(raw)
        except (TypeError, ValueError):
            raise NotFound(f"Deployment {raw!r} not found: choose active deployments of this workspace.", field="deployment_ids") from None
        if pk not in wanted:
            wanted.append(pk)
    found = {
        d.pk: d
        for d in AgentDeployment.objects.select_related("provider_account", "runtime_profile").filter(
            workspace=workspace, pk__in=wanted, status=LifecycleStatus.ACTIVE
        )
    }
    if len(found) != len(wanted):
        raise NotFound("Deployment not found: choose active deployments of this workspace.", field="deployment_ids")
    return [found[pk] for pk in wanted]


@transaction.atomic
def run_create(
    *,
    workspace: Workspace,
    user: Any,
    pack_version: PackVersion,
    deployment_ids: Sequence[Any],
    input_set_id: Any = None,
    name: str = "",
    judge_deployments: Mapping[str, Any] | None = None,
    allow_missing_judges: bool = False,
    simulator_deployment_id: Any = None,
    race_context: bool = False,
    regression_suite_ids: Sequence[Any] | None = None,
    regression_case_ids: Sequence[Any] | None = None,
    regression_scope: str | None = None,
    include_proposed: bool = False,
    repeats: Any = 1,
    max_repeats: Any = None,
    max_regression: Any = None,
    confidence: Any = None,
) -> Run:
    """Create a queued run. Raises a DomainError naming the argument at fault (``RunCreateError``, a
    400, or ``NotFound`` for another workspace's version, deployment or regression suite).

    ``judge_deployments`` maps each LLM judge model as written in the pack to a deployment id
    (runs/services/resolve.py says how unnamed models resolve); ``simulator_deployment_id`` is
    the deployment that plays ``llm`` user-simulator phases (required when a case has one).
    ``regression_suite_ids`` / ``regression_case_ids`` add regression cases (their active ones,
    plus proposed ones with ``include_proposed``); ``regression_scope`` ``suite_only`` leaves the
    pack's own cases out (docs/regression-suites.md).
    """
    if pack_version.workspace_id != workspace.pk:
        raise NotFound("Pack version not found.", field="pack_version_id")
    if pack_version.lifecycle_status != PackVersion.Lifecycle.RUNNABLE:
        raise RunCreateError("This pack version is not runnable: choose a runnable version of the pack.", field="pack_version_id")
    mode = (pack_version.execution_mode or "native").strip() or "native"
    if mode not in SUPPORTED_MODES:
        raise RunCreateError(
            f"Unknown execution mode {mode!r}: choose a version whose mode is one of {', '.join(sorted(SUPPORTED_MODES))}.",
            field="pack_version_id",
        )
    input_set = _input_set_for(pack_version, input_set_id)
    regression = run_regression_resolve(
        workspace=workspace, pack_version=pack_version, suite_ids=regression_suite_ids, case_ids=regression_case_ids,
        scope=regression_scope, include_proposed=include_proposed,
    )  # fmt: skip
    cases = list(Case.objects.filter(input_set=input_set).order_by("position", "pk")) if regression.pack_cases else []
    if not cases and not regression.cases:
        raise RunCreateError("The input set has no cases: choose another input set, or add regression suites.", field="input_set_id")
    simulated = [(case.case_key, _engine_case(pack_version, input_set, case)) for case in cases] if mode == "multi_turn" else []
    if mode == "multi_turn":
        simulated += [(rc.run_case_key, engine_case({}, "", rc.source_case, found=rc.payload)) for rc in regression.cases]
    refusal = simulator_refusal(simulated)
    if refusal:
        raise RunCreateError(refusal, field="pack_version_id", code="simulator_unsupported")
    deployments = _deployments(workspace, deployment_ids)
    _check_modes(mode, deployments)
    trials = repeats_resolve(
        repeats=repeats, max_repeats=max_repeats, lanes=len(deployments), max_regression=max_regression, confidence=confidence
    )
    _check_responses_and_race(mode, deployments, race_context=race_context)
    manifest = pack_version.manifest or {}
    run_preflight(workspace=workspace, manifest=manifest)  # secrets and sandbox: refused now, not mid-case
    judges = judges_resolve(
        workspace=workspace,
        manifest=manifest,
        chosen=judge_deployments,
        lane_ids=[d.pk for d in deployments],
        allow_missing=bool(allow_missing_judges),
    )
    simulator = simulator_resolve(workspace=workspace, deployment_id=simulator_deployment_id, needed=needs_simulator(simulated))
    pack_limit = _pack_max_iterations(manifest)
    now = timezone.now()
    run = Run(
        workspace=workspace, pack_version=pack_version, input_set=input_set,
        name=(name or "").strip()[:200] or run_default_name(workspace=workspace, pack_version=pack_version, deployments=deployments, at=now),
        status=RunStatus.QUEUED, mode=Run.Mode.COMPARISON if len(deployments) > 1 else Run.Mode.SINGLE_AGENT,
        execution_mode=mode, created_by=actor_or_none(user), queued_at=now,
        judge_snapshot=judges, simulator_snapshot=simulator, race_context=bool(race_context),
        workspace_had_secrets=secrets_exist(workspace=workspace),  # lets cases skip reading secrets (docs/secrets.md)
        repeats=trials.first_round, repeats_mode=trials.mode, max_repeats=trials.max_repeats,
        round_max_regression=trials.max_regression, round_confidence=trials.confidence,
    )  # fmt: skip
    full_clean(run)
    run.save()
    RunStatusHistory.objects.create(
        run=run, from_status=RunStatus.DRAFT, to_status=RunStatus.QUEUED, reason="run created", changed_by=run.created_by
    )
    case_rows: list[CaseRun] = []
    for index, deployment in enumerate(deployments):
        snapshot = deployment_snapshot(deployment)
        if pack_limit is not None:
            snapshot["runtime_profile"]["max_iterations"] = pack_limit
            snapshot["runtime_profile"]["max_iterations_source"] = "pack"
        lane = Lane.objects.create(
            run=run,
            workspace=workspace,
            deployment=deployment,
            lane_index=index,
            label=deployment.name,
            snapshot=snapshot,
            status=LaneStatus.QUEUED,
            trials=trials.first_round,
        )
        for trial in range(1, trials.first_round + 1):
            case_rows.extend(
                CaseRun(run=run, lane=lane, case=case, case_key=case.case_key, position=position, trial=trial)
                for position, case in enumerate(cases)
            )
            case_rows.extend(
                CaseRun(
                    run=run,
                    lane=lane,
                    case_id=rc.source_case_id,
                    case_key=rc.run_case_key,
                    position=len(cases) + offset,
                    regression_case=rc,
                    trial=trial,
                )
                for offset, rc in enumerate(regression.cases)
            )
    CaseRun.objects.bulk_create(case_rows, batch_size=1000)
    enqueue_on_commit(RunStart(run_id=run.pk))
    return run


def _check_modes(mode: str, deployments: list[AgentDeployment]) -> None:
    """Each lane's runtime profile runs the pack's execution mode (a hosted agent takes any
    single-shot pack): the profile decides the loop an agent was configured and tested for, so a
    native agent is not silently run as a one-call prompt_eval (docs/runs.md, "Pre-flight")."""
    hosted = [d.name for d in deployments if d.runtime_profile.execution_target == HOSTED_EXTERNAL]
    if hosted and mode not in HOSTED_PACK_MODES:
        raise RunCreateError(
            f"{', '.join(hosted)} {'is a hosted agent' if len(hosted) == 1 else 'are hosted agents'}: hosted agents race in "
            f"native and prompt_eval packs, not {mode} ones (docs/hosted-agents.md).",
            field="deployment_ids",
            code="deployment_mode_mismatch",
        )
    unfit = [d for d in deployments if d.runtime_profile.execution_target not in (mode, HOSTED_EXTERNAL)]
    if unfit:
        names = ", ".join(f"{d.name} (runtime profile {d.runtime_profile.name!r} runs {d.runtime_profile.execution_target})" for d in unfit)
        raise RunCreateError(
            f"This is a {mode} pack and {names} cannot run it: choose deployments whose runtime profile's execution target "
            f"is {mode}, or change the profile's execution target (Runtime profiles).",
            field="deployment_ids",
            code="deployment_mode_mismatch",
            extra={"deployments": [d.name for d in unfit], "execution_mode": mode},
        )


def _check_responses_and_race(mode: str, deployments: list[AgentDeployment], *, race_context: bool) -> None:
    """``responses`` packs need deployments whose provider speaks the Responses API; race context
    needs peers (docs/responses-mode.md, docs/runs.md)."""
    if mode == "responses":
        keys = {d.pk: (getattr(d.provider_account, "provider_key", "") or "").strip().lower() for d in deployments}
        unable = [d.name for d in deployments if keys[d.pk] not in RESPONSES_PROVIDER_KEYS]
        if unable:
            raise RunCreateError(
                f"{', '.join(unable)} cannot run a responses pack: its provider does not serve the OpenAI Responses API "
                f"(use an openai, custom or scripted provider account).",
                field="deployment_ids",
                code="responses_unsupported",
            )
    if race_context and len(deployments) < 2:
        raise RunCreateError("Peer standings (race_context) need at least two deployments to compare.", field="race_context")


def _engine_case(version: PackVersion, input_set: InputSet, case: Case) -> dict[str, Any]:
    return engine_case(version.manifest or {}, input_set.key, case)

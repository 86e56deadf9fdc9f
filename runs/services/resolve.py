"""What a run is created with, frozen at creation: lane deployments, judges, the user simulator.

Judges (issue 15): every LLM judge model the pack names (as written in the pack) resolves to an
active deployment of the workspace — the one the request chose for it, else one whose model is
exactly that model, else the workspace's default judge. Deployments racing in the run are never
picked implicitly (an agent does not grade itself unless someone chose so). A model left without
a deployment refuses the run (``judge_unresolved``) unless ``allow_missing_judges``; those judges
then score "no judge configured". The agent's own deployment is never a fallback.

The refusal judge (docs/security-evaluation.md §4): a security pack with refusal-checked
adversarial prompts also has the judge slot ``security:refusal``, resolved the same way (chosen,
else the workspace's default judge) but optional: without a deployment the slot is left out of the
snapshot and a refusal the pack's pattern misses is an unconfirmed warning.

User simulator: a pack whose cases have an ``llm`` phase that can fire needs a simulator
deployment chosen at creation; a ``human`` phase that can fire refuses the run (runs are
unattended; a human phase behind ``manual`` never fires, so it is allowed).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from core.errors import DomainError
from engine.modes import llm_phases, unsupported_simulator_phases
from engine.scoring.refusal import REFUSAL_JUDGE
from engine.scoring.security import SecurityPolicy
from infrastructure.models import AgentDeployment, LifecycleStatus
from workspaces.models import Workspace

JUDGE_CHOSEN = "chosen"
JUDGE_MODEL_MATCH = "model_match"
JUDGE_WORKSPACE_DEFAULT = "workspace_default"
JUDGE_SOURCE_LABELS = {
    JUDGE_CHOSEN: "chosen for this run",
    JUDGE_MODEL_MATCH: "same model",
    JUDGE_WORKSPACE_DEFAULT: "workspace default judge",
}


class RunCreateError(DomainError):
    """A run request that can't be honoured (a 400); ``field`` names the offending input (the API's
    and the New-run form's field), ``code`` the error."""

    @property
    def text(self) -> str:
        """The message under its old name: ``manage.py run_pack`` still reads it."""
        return self.message


def deployment_snapshot(deployment: AgentDeployment) -> dict[str, Any]:
    """Everything a worker needs about a lane, as it is now (later edits don't rewrite history)."""
    account = deployment.provider_account
    profile = deployment.runtime_profile
    sandbox = {
        k: v
        for k, v in {
            "allow_shell": profile.allow_shell,
            "allow_network": profile.allow_network,
            "max_workspace_bytes": profile.max_workspace_bytes,
        }.items()
        if v is not None
    }
    return {
        "deployment": {
            "id": deployment.pk,
            "name": deployment.name,
            "model": deployment.model,
            "system_prompt": deployment.system_prompt,
            "output_schema": deployment.output_schema,
            "deployment_config": deployment.deployment_config or {},
            "endpoint_url": deployment.endpoint_url,
        },
        "provider_account": {
            "id": account.pk,
            "name": account.name,
            "provider_key": account.provider_key,
            "credential_reference": account.credential_reference,
            "base_url": account.base_url,
        },
        "model": deployment.model,
        "runtime_profile": {
            "id": profile.pk,
            "name": profile.name,
            "execution_target": profile.execution_target,
            "max_iterations": profile.max_iterations,
            "max_tool_calls": profile.max_tool_calls,
            "step_timeout_seconds": profile.step_timeout_seconds,
            "run_timeout_seconds": profile.run_timeout_seconds,
            "max_in_flight_cases": profile.max_in_flight_cases,
            "sandbox": sandbox,
        },
    }


def caller_snapshot(deployment: AgentDeployment, **extra: Any) -> dict[str, Any]:
    """A judge's or simulator's snapshot: the deployment and provider account (no runtime profile)."""
    snapshot = deployment_snapshot(deployment)
    return {"deployment": snapshot["deployment"], "provider_account": snapshot["provider_account"], "model": deployment.model, **extra}


def _active(workspace: Workspace) -> Any:
    return AgentDeployment.objects.select_related("provider_account", "runtime_profile").filter(
        workspace=workspace, status=LifecycleStatus.ACTIVE
    )


def _deployment_id(raw: Any) -> int | None:
    if isinstance(raw, bool):
        return None
    try:
        return int(raw)
    except (TypeError, ValueError):
        return None


# -- judges ---------------------------------------------------------------------------------------


def pack_judge_models(manifest: Mapping[str, Any]) -> list[str]:
    """Every model the pack's LLM judges name, as written, in order of first mention."""
    spec = manifest.get("evaluation_spec") or {}
    models: list[str] = []
    for decl in (spec.get("llm_judges") if isinstance(spec, dict) else None) or []:
        if not isinstance(decl, dict):
            continue
        named = decl.get("models") or ([decl["model"]] if decl.get("model") else [])
        for model in named if isinstance(named, list) else []:
            text = str(model).strip()
            if text and text not in models:
                models.append(text)
    return models


def has_refusal_slot(manifest: Mapping[str, Any]) -> bool:
    """Whether the pack has adversarial prompts with a refusal pattern (a refusal judge could settle them)."""
    policy = SecurityPolicy.from_manifest(dict(manifest))
    return policy is not None and any(p.refusal_pattern for p in policy.adversarial_prompts)


def judge_suggestions(
    *, workspace: Workspace, models: Iterable[str], exclude_ids: Iterable[int] = ()
) -> dict[str, tuple[AgentDeployment | None, str]]:
    """Per judge model, the deployment a run would use if nobody chose one, and why (or None, "")."""
    excluded = set(exclude_ids)
    wanted = list(models)
    candidates = [d for d in _active(workspace).order_by("name", "pk") if d.pk not in excluded]
    default = next((d for d in candidates if d.is_default_judge), None)
    suggestions: dict[str, tuple[AgentDeployment | None, str]] = {}
    for model in wanted:
        match = next((d for d in candidates if d.model == model), None)
        if match is not None:
            suggestions[model] = (match, JUDGE_MODEL_MATCH)
        elif default is not None:
            suggestions[model] = (default, JUDGE_WORKSPACE_DEFAULT)
        else:
            suggestions[model] = (None, "")
    return suggestions


def judges_resolve(
    *,
    workspace: Workspace,
    manifest: Mapping[str, Any],
    chosen: Mapping[str, Any] | None,
    lane_ids: Iterable[int],
    allow_missing: bool,
) -> dict[str, dict[str, Any] | None]:
    """The run's judge snapshot: ``{model: snapshot or None}``. Raises RunCreateError.

    ``chosen`` maps a model (as written in the pack) to a deployment id; a model mapped to None
    or "" means "no judge for it" (then ``allow_missing`` is needed), a model left out is
    resolved implicitly (:func:`judge_suggestions`, never from the run's own lanes).
    """
    models = pack_judge_models(manifest)
    refusal = has_refusal_slot(manifest)
    chosen = dict(chosen or {})
    unknown = sorted(str(key) for key in chosen if key not in models and not (refusal and key == REFUSAL_JUDGE))
    if unknown:
        named = ", ".join(models) if models else "none"
        slot = f"; its refusal judge slot: {REFUSAL_JUDGE}" if refusal else ""
        raise RunCreateError(
            f"{', '.join(unknown)} {'is' if len(unknown) == 1 else 'are'} not a judge model of this pack (its LLM judges use: {named}{slot}).",
            field="judge_deployments",
        )
    ids = {model: _deployment_id(raw) for model, raw in chosen.items() if raw not in (None, "")}
    bad = sorted(model for model, pk in ids.items() if pk is None)
    if bad:
        raise RunCreateError(f"The judge deployment for {', '.join(bad)} must be a deployment id.", field="judge_deployments")
    found = {d.pk: d for d in _active(workspace).filter(pk__in=[pk for pk in ids.values() if pk is not None])}
    for model, pk in ids.items():
        if pk not in found:
            # The same words whether the id is unknown, archived or another workspace's.
            raise RunCreateError(
                f"The judge deployment {pk} for {model} was not found among this workspace's active deployments.",
                field="judge_deployments",
            )
    slots = [*models, REFUSAL_JUDGE] if refusal else models
    suggestions = judge_suggestions(workspace=workspace, models=[m for m in slots if m not in chosen], exclude_ids=lane_ids)
    resolved: dict[str, dict[str, Any] | None] = {}
    missing: list[str] = []
    for model in models:
        if model in ids:
            deployment, source = found[ids[model]], JUDGE_CHOSEN
        else:
            deployment, source = suggestions.get(model, (None, ""))
        if deployment is None:
            missing.append(model)
            resolved[model] = None
        else:
            resolved[model] = caller_snapshot(deployment, source=source)
    if missing and not allow_missing:
        raise RunCreateError(
            f"No judge deployment for {', '.join(missing)}. Choose one per model (judge_deployments), set a workspace "
            "default judge, or start the run with allow_missing_judges to leave those judge dimensions unavailable.",
            field="judge_deployments",
            code="judge_unresolved",
            extra={"models": missing},
        )
    if refusal:
        picked = found[pk] if (pk := ids.get(REFUSAL_JUDGE)) is not None else None
        _refusal_slot(resolved, picked, suggestions.get(REFUSAL_JUDGE, (None, "")))
    return resolved


def _refusal_slot(
    resolved: dict[str, dict[str, Any] | None], picked: AgentDeployment | None, suggested: tuple[AgentDeployment | None, str]
) -> None:
    """The refusal judge: the deployment chosen for it, else the suggestion; no entry without one
    (chosen as None/"" leaves no suggestion either)."""
    deployment, source = (picked, JUDGE_CHOSEN) if picked is not None else suggested
    if deployment is not None:
        resolved[REFUSAL_JUDGE] = caller_snapshot(deployment, source=source)


# -- the user simulator ---------------------------------------------------------------------------


def simulator_refusal(cases: Iterable[tuple[str, dict[str, Any]]]) -> str | None:
    """The plain reason a run of these (case_key, engine case) pairs cannot run unattended, if any."""
    for case_key, case in cases:
        for phase in unsupported_simulator_phases(case):
            who = "a person" if phase.actor == "human" else f"the {phase.actor!r} actor"
            return (
                f"Case {case_key!r} has a user-simulator phase {phase.phase_id!r} played by {who} that starts "
                f"automatically (trigger {phase.trigger}). Runs here are unattended, so nobody could type those "
                "turns. Give that phase the trigger manual or never, or remove it, and publish a new version."
            )
    return None


def needs_simulator(cases: Iterable[tuple[str, dict[str, Any]]]) -> bool:
    """Whether any case has an ``llm`` user-simulator phase that can run."""
    return any(llm_phases(case) for _, case in cases)


def simulator_resolve(*, workspace: Workspace, deployment_id: Any, needed: bool) -> dict[str, Any] | None:
    """The run's simulator snapshot (None when not needed). Raises RunCreateError."""
    if not needed:
        return None
    if deployment_id in (None, ""):
        raise RunCreateError(
            "This pack has LLM user-simulator phases: choose the deployment that plays the user (simulator_deployment_id).",
            field="simulator_deployment_id",
            code="simulator_required",
        )
    pk = _deployment_id(deployment_id)
    deployment = _active(workspace).filter(pk=pk).first() if pk is not None else None
    if deployment is None:
        raise RunCreateError(
            f"The simulator deployment {deployment_id} was not found among this workspace's active deployments.",
            field="simulator_deployment_id",
        )
    return caller_snapshot(deployment)

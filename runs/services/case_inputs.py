"""What one case attempt is given, shared by the native path (runs/services/attempt.py) and the
hosted path (runs/hosted/attempt.py): the pack's case and challenge, the engine's request, and the
files a native agent finds in its sandbox. One implementation, so a hosted agent is sent exactly
what a native one would see.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from artifacts.selectors import staged_asset_files
from engine.modes import CaseRequest
from packs.manifests import PackManifest, pack_manifest
from runs.models import CaseRun
from runs.services.staging import challenge_for, engine_case, staged_files

JSON = Any
# The runtime profile's limits the engine enforces per case.
PROFILE_LIMITS = ("max_iterations", "max_tool_calls", "step_timeout_seconds", "run_timeout_seconds")
# Deployment settings that are the scripted provider's answers, never shown to the agent's sandbox.
CONFIG_HIDDEN_FROM_SANDBOX = ("script", "judge_responses", "replies")


def execution_mode(case_run: CaseRun) -> str:
    return case_run.run.execution_mode or "native"


def emitter_prefix(case_run: CaseRun) -> str:
    """The prefix of every event id of this case attempt (unique per lane, case and attempt)."""
    return f"{execution_mode(case_run)}:{case_run.lane_id}:{case_run.pk}:{case_run.attempt}"


@dataclasses.dataclass(frozen=True)
class CaseInputs:
    pack: PackManifest
    case: dict[str, JSON]
    challenge: dict[str, JSON]


def case_inputs(case_run: CaseRun) -> CaseInputs:
    """The case's pack manifest, its engine case and its challenge."""
    run = case_run.run
    # The claim annotates the checksum and the input set's key (runs.lifecycle._claimed).
    pack = pack_manifest(pack_version_id=run.pack_version_id, checksum=getattr(case_run, "pack_checksum", None))
    input_set_key = getattr(case_run, "input_set_key", None) or run.input_set.key
    # A regression case runs its promote-time snapshot against this run's challenge of the same key.
    found = case_run.case_payload if case_run.regression_case_id is not None else pack.case(input_set_key, case_run.case_key)
    case = engine_case(pack.manifest, input_set_key, case_run.case, found=found)
    challenge = challenge_for(pack.manifest, case.get("challenge_key") or case_run.case.challenge_key)
    return CaseInputs(pack=pack, case=case, challenge=challenge)


def run_context(case_run: CaseRun) -> dict[str, JSON]:
    """What the sandbox may know about the run (staged as a file, spec runtime.md §1.3)."""
    lane = case_run.lane
    return {
        "run_id": case_run.run_id,
        "run_agent_id": lane.pk,
        "run_name": case_run.run.name,
        "case_key": case_run.case_key,
        "deployment_config": {k: v for k, v in lane.deployment_config.items() if k not in CONFIG_HIDDEN_FROM_SANDBOX},
        "runtime_profile": lane.runtime_profile_snapshot,
    }


def staged_case_files(case_run: CaseRun, inputs: CaseInputs) -> dict[str, bytes]:
    """The files staged into a native agent's sandbox: path → bytes."""
    files = staged_files(manifest=inputs.pack.manifest, challenge=inputs.challenge, case=inputs.case, run_context=run_context(case_run))
    # Artifact-backed assets (spec runtime.md §1.3): version, challenge and case assets with an artifact_id.
    asset_groups = ((inputs.pack.manifest.get("version") or {}).get("assets"), inputs.challenge.get("assets"), inputs.case.get("assets"))
    files.update(staged_asset_files(workspace_id=case_run.run.workspace_id, asset_groups=asset_groups))
    return files


def case_request(case_run: CaseRun, inputs: CaseInputs, *, simulator_model: str = "") -> CaseRequest:
    """The engine's request for this case attempt."""
    lane = case_run.lane
    deployment = lane.deployment_snapshot
    profile = lane.runtime_profile_snapshot
    return CaseRequest(
        execution_mode=execution_mode(case_run),
        run_id=str(case_run.run_id),
        lane_id=str(lane.pk),
        case_key=case_run.case_key,
        event_id_prefix=emitter_prefix(case_run),
        model=lane.model_name,
        system_prompt=deployment.get("system_prompt") or "",
        output_schema=deployment.get("output_schema") or None,
        manifest=inputs.pack.manifest,
        challenge=inputs.challenge,
        case=inputs.case,
        deployment_config=lane.deployment_config,
        runtime_profile={k: profile.get(k) for k in PROFILE_LIMITS},
        runtime_limits=dict(inputs.pack.evaluation_spec.get("runtime_limits") or {}),
        simulator_model=simulator_model,
    )

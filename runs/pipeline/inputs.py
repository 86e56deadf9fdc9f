"""What one case attempt is given (into its context, runs/pipeline/context.py), shared by the native
path (runs/pipeline/native.py) and the hosted path (runs/pipeline/hosted/attempt.py): the pack's
case and challenge, and the files a native agent finds in its sandbox. One implementation, so a
hosted agent is sent exactly what a native one would see.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from artifacts.selectors import staged_asset_files
from packs.manifests import PackManifest
from runs.models import CaseRun
from runs.pipeline.staging import challenge_for, engine_case, staged_files

JSON = Any
# Deployment settings that are the scripted provider's answers, never shown to the agent's sandbox.
CONFIG_HIDDEN_FROM_SANDBOX = ("script", "judge_responses", "replies")


@dataclasses.dataclass(frozen=True)
class CaseInputs:
    case: dict[str, JSON]
    challenge: dict[str, JSON]


def case_inputs(case_run: CaseRun, pack: PackManifest, input_set_key: str) -> CaseInputs:
    """The case's engine case and its challenge (built once, into the case's context)."""
    # A regression case runs its promote-time snapshot against this run's challenge of the same key.
    found = case_run.case_payload if case_run.regression_case_id is not None else pack.case(input_set_key, case_run.case_key)
    case = engine_case(pack.manifest, input_set_key, case_run.case, found=found)
    challenge = challenge_for(pack.manifest, case.get("challenge_key") or case_run.case.challenge_key)
    return CaseInputs(case=case, challenge=challenge)


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


def staged_case_files(case_run: CaseRun, pack: PackManifest, inputs: CaseInputs) -> dict[str, bytes]:
    """The files staged into a native agent's sandbox (and listed to a hosted one): path → bytes."""
    files = staged_files(manifest=pack.manifest, challenge=inputs.challenge, case=inputs.case, run_context=run_context(case_run))
    # Artifact-backed assets (spec runtime.md §1.3): version, challenge and case assets with an artifact_id.
    asset_groups = ((pack.manifest.get("version") or {}).get("assets"), inputs.challenge.get("assets"), inputs.case.get("assets"))
    files.update(staged_asset_files(workspace_id=case_run.run.workspace_id, asset_groups=asset_groups))
    return files

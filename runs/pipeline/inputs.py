"""What one case attempt is given (into its context, runs/pipeline/context.py), shared by the native
path (runs/pipeline/native.py) and the hosted path (runs/pipeline/hosted/attempt.py): the engine's
case and its challenge, and the files a native agent finds in its sandbox (context files, fixtures,
planted secrets, artifact-backed assets). One implementation, so a hosted agent is sent exactly
what a native one would see.

What a case's sandbox starts with (spec runtime.md §1.3). Ground truth never goes in.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from artifacts.selectors import staged_asset_files
from engine.jsoncache import DumpCache
from engine.modes.context import HIDDEN_MANIFEST_KEYS, strip_hidden
from engine.redact import Redactor
from engine.scoring.security import SecurityPolicy
from packs.manifests import PackManifest
from packs.models import Case
from runs.models import CaseRun

# Ground truth, and a security pack's block (its planted values and what it is judged by).
_HIDDEN_TOP = ("evaluation_spec", "input_sets", *HIDDEN_MANIFEST_KEYS)


def _manifest_case(manifest: dict[str, Any], input_set_key: str, case_key: str) -> dict[str, Any] | None:
    for input_set in manifest.get("input_sets") or []:
        if isinstance(input_set, dict) and input_set.get("key") == input_set_key:
            for case in input_set.get("cases") or []:
                if isinstance(case, dict) and (case.get("case_key") or case.get("item_key")) == case_key:
                    return case
    return None


def engine_case(manifest: dict[str, Any], input_set_key: str, case: Case, found: dict[str, Any] | None = None) -> dict[str, Any]:
    """The case as the engine gets it, without ``expectations`` (the scorer reads those itself).

    Turn ``expects`` of a multi-turn simulator stay: the engine checks them between turns and
    never shows them to the model (engine.modes.context strips them from what the model sees).
    """
    if found is None:
        found = _manifest_case(manifest, input_set_key, case.case_key)
    if found is None:
        stored = case.payload if isinstance(case.payload, dict) else {}
        if stored.get("schema_version"):
            found = {k: v for k, v in stored.items() if k != "schema_version"}
        else:
            found = {"payload": stored}
        found.setdefault("case_key", case.case_key)
        found.setdefault("challenge_key", case.challenge_key)
    result = {k: v for k, v in found.items() if k != "expectations"}
    result.setdefault("item_key", case.item_key or case.case_key)
    return result


def challenge_for(manifest: dict[str, Any], challenge_key: str) -> dict[str, Any]:
    for challenge in manifest.get("challenges") or []:
        if isinstance(challenge, dict) and challenge.get("key") == challenge_key:
            return challenge
    return {}


def sanitised_manifest(manifest: dict[str, Any]) -> dict[str, Any]:
    stripped = strip_hidden({k: v for k, v in manifest.items() if k not in _HIDDEN_TOP})
    return stripped if isinstance(stripped, dict) else {}


def _fixture_files(case: dict[str, Any]) -> dict[str, bytes]:
    files: dict[str, bytes] = {}
    payload = case.get("payload")
    if not isinstance(payload, dict):
        payload = {}
    candidates: list[Any] = list(payload.get("workspace_files") or [])
    for item in case.get("inputs") or []:
        if isinstance(item, dict) and item.get("kind") == "workspace" and isinstance(item.get("value"), list):
            candidates.extend(item["value"])
    for entry in candidates:
        if isinstance(entry, dict) and isinstance(entry.get("path"), str) and entry["path"].strip():
            content = entry.get("content", "")
            text = content if isinstance(content, str) else json.dumps(content, indent=2, sort_keys=True)
            path = entry["path"].strip()
            files[path if path.startswith("/") else f"/workspace/{path}"] = text.encode()
    return files


def planted_files(manifest: dict[str, Any]) -> dict[str, bytes]:
    """A security pack's ``file`` planted secrets, each at its ``file_path`` (docs/security-evaluation.md)."""
    policy = SecurityPolicy.from_manifest(manifest)
    return {s.workspace_path(): s.value.encode() for s in (policy.planted_at("file") if policy else []) if s.workspace_path()}


_STAGED_MANIFEST: DumpCache[bytes] = DumpCache()
_STAGED_CHALLENGE: DumpCache[bytes] = DumpCache(64)


def staged_files(
    *, manifest: dict[str, Any], challenge: dict[str, Any], case: dict[str, Any], run_context: dict[str, Any]
) -> dict[str, bytes]:
    """``/workspace/agentclash/*.json`` context files plus the case's fixture files and planted files.

    The context files never hold a planted secret value: the security block is dropped and the
    values (e.g. in ``sandbox.env_vars``) are masked.
    """
    policy = SecurityPolicy.from_manifest(manifest)
    mask = Redactor(policy.canary_values if policy else [])

    def dump(value: Any) -> bytes:
        return json.dumps(mask.json(value), indent=2, sort_keys=True, default=str).encode()

    files = {
        "/workspace/agentclash/run-context.json": dump(strip_hidden(run_context)),
        # the same for every case of the pack: encoded once per (shared, read-only) manifest object
        "/workspace/agentclash/challenge-pack-manifest.json": _STAGED_MANIFEST.get(manifest, lambda m: dump(sanitised_manifest(m))),
        # a challenge of the manifest is shared by its cases too (masked by the same manifest's policy)
        "/workspace/agentclash/challenges.json": _STAGED_CHALLENGE.get(challenge, lambda c: dump([strip_hidden(c)]))
        if challenge
        else dump([]),
        "/workspace/agentclash/challenge-input-set.json": dump({"cases": [strip_hidden(case)]}),
    }
    files.update(_fixture_files(case))
    files.update(planted_files(manifest))
    return files


JSON = Any
# Deployment settings that are the scripted provider's answers, never shown to the agent's sandbox.
CONFIG_HIDDEN_FROM_SANDBOX = ("script", "judge_responses", "replies")


@dataclasses.dataclass(frozen=True)
class CaseInputs:
    case: dict[str, JSON]
    challenge: dict[str, JSON]


def case_inputs(case_run: CaseRun, manifest: dict[str, Any], input_set_key: str, found: dict[str, Any] | None) -> CaseInputs:
    """The case's engine case and its challenge (built once, into the case's context); ``found``:
    the case as the manifest (or a regression case's snapshot) has it."""
    case = engine_case(manifest, input_set_key, case_run.case, found=found)
    challenge = challenge_for(manifest, case.get("challenge_key") or case_run.case.challenge_key)
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
    version = pack.manifest.get("version")
    groups = ((version if isinstance(version, dict) else {}).get("assets"), inputs.challenge.get("assets"), inputs.case.get("assets"))
    asset_groups = [[asset for asset in group if isinstance(asset, dict)] if isinstance(group, list) else None for group in groups]
    files.update(staged_asset_files(workspace_id=case_run.run.workspace_id, asset_groups=asset_groups))
    return files

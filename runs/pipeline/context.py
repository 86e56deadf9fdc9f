"""A claimed case's context: everything its attempt, staging and scoring read, derived once.

Built by :func:`case_context` right after the claim, from the claimed row (its run, lane and case
loaded by the claim's one query, with the pack version's manifest checksum and the input set's
key) and passed down, frozen: the native attempt, the hosted attempt, staging and scoring read it
instead of deriving the manifest, the security policy or the secrets again.

What the attempt is given is built here too, for the native path (runs/pipeline/native.py) and
the hosted path (runs/pipeline/hosted/attempt.py) alike: the engine's case and its challenge, and
the files a native agent finds in its sandbox (context files, fixtures, planted secrets,
artifact-backed assets; spec runtime.md §1.3). One implementation, so a hosted agent is sent
exactly what a native one would see. Ground truth never goes in.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import logging
from collections.abc import Mapping
from typing import Any, cast

from artifacts.selectors import staged_asset_files
from engine.jsoncache import DumpCache
from engine.modes import CaseRequest
from engine.modes.context import HIDDEN_MANIFEST_KEYS, strip_hidden
from engine.redact import Redactor
from engine.scoring.security import SecurityPolicy
from engine.scoring.spec import EvaluationSpec
from engine.tools.composed import secret_keys_used
from engine.types import JSONObject
from packs.manifests import PackManifest, pack_manifest
from packs.models import Case
from runs.models import HOSTED_EXTERNAL, CaseRun, Lane, Run
from secrets_app.services import secrets_resolve_for_run
from workspaces.models import Workspace

logger = logging.getLogger(__name__)

MAX_ATTEMPTS = 3  # attempts per case, worker deaths included
# The runtime profile's limits the engine enforces per case.
PROFILE_LIMITS = ("max_iterations", "max_tool_calls", "step_timeout_seconds", "run_timeout_seconds")


# -- what the attempt is given: the engine's case and challenge, the staged files ---------------

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


# -- the context ------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class CaseContext:
    """One claimed case attempt, as its worker sees it for the whole attempt: plain data, derived once."""

    case_run: CaseRun  # the claimed row, with its run, lane and case
    run: Run
    lane: Lane
    attempt: int
    workspace: Workspace  # only its id is needed: the claim does not load the workspace row
    mode: str  # the pack's execution mode
    prefix: str  # the prefix of every event id of this attempt (unique per lane, case and attempt)
    hosted: bool  # the team's own server runs the agent (runs/pipeline/hosted/, docs/hosted-agents.md)
    pack: PackManifest  # the version's manifest (from the per-process cache, by checksum)
    evaluation_spec: EvaluationSpec
    input_set_key: str
    inputs: CaseInputs  # the engine's case and its challenge
    security: SecurityPolicy | None  # a security pack's policy (docs/security-evaluation.md)
    secrets: Mapping[str, str]  # the workspace's secrets, in memory (empty when none can be used)
    secrets_error: str | None  # why they could not be read
    redactor: Redactor  # masks secret and planted values in everything stored
    score_inline: bool  # score with the finish, from the events as written (the worker's path)
    # The sink keeps what it stores, to score from: a native attempt scored inline (its own events
    # are its whole evidence; a hosted agent's events came through the callback).
    keeps_events: bool

    def request(self, *, simulator_model: str = "") -> CaseRequest:
        """The engine's request for this case attempt."""
        lane = self.lane
        deployment = lane.deployment_snapshot
        profile = lane.runtime_profile_snapshot
        return CaseRequest(
            execution_mode=self.mode,
            run_id=str(self.case_run.run_id),
            lane_id=str(lane.pk),
            case_key=self.case_run.case_key,
            event_id_prefix=self.prefix,
            model=lane.model_name,
            system_prompt=deployment.get("system_prompt") or "",
            output_schema=deployment.get("output_schema") or None,
            manifest=self.pack.manifest,
            challenge=self.inputs.challenge,
            case=self.inputs.case,
            deployment_config=lane.deployment_config,
            runtime_profile={k: profile.get(k) for k in PROFILE_LIMITS},
            runtime_limits=cast(JSONObject, dict(self.evaluation_spec.get("runtime_limits") or {})),
            simulator_model=simulator_model,
        )

    @functools.cached_property
    def staged_files(self) -> dict[str, bytes]:
        """The files staged into a native agent's sandbox (and listed to a hosted one), built once."""
        return staged_case_files(self.case_run, self.pack, self.inputs)


def attempt_prefix(case_run: CaseRun) -> str:
    """The prefix of every event id of this case attempt (unique per lane, case and attempt)."""
    return f"{case_run.run.execution_mode or 'native'}:{case_run.lane_id}:{case_run.pk}:{case_run.attempt}"


def case_context(case_run: CaseRun, *, score_inline: bool = False) -> CaseContext:
    """The context of a freshly claimed case (``runs.lifecycle.case_claim``'s row)."""
    run = case_run.run
    # The claim's query annotates the checksum and the input set's key (runs/lifecycle.py _claimed);
    # a row loaded another way reads them.
    input_set_key = str(getattr(case_run, "input_set_key", None) or run.input_set.key)
    pack = pack_manifest(pack_version_id=run.pack_version_id, checksum=getattr(case_run, "pack_checksum", None))
    spec = pack.evaluation_spec
    # A regression case runs its promote-time snapshot against this run's challenge of the same key.
    found = case_run.case_payload if case_run.regression_case_id is not None else pack.case(input_set_key, case_run.case_key)
    security = _security_policy(case_run, pack)
    secrets, secrets_error = _secrets(case_run, pack)
    # A security pack's planted values are masked like secrets in everything stored.
    redactor = Redactor([*secrets.values(), *(security.canary_values if security else [])])
    hosted = case_run.lane.runtime_profile_snapshot.get("execution_target") == HOSTED_EXTERNAL
    return CaseContext(
        case_run=case_run,
        run=run,
        lane=case_run.lane,
        attempt=case_run.attempt,
        workspace=_workspace_of(run),
        mode=run.execution_mode or "native",
        prefix=attempt_prefix(case_run),
        hosted=hosted,
        pack=pack,
        evaluation_spec=spec,
        input_set_key=input_set_key,
        inputs=case_inputs(case_run, pack.manifest, input_set_key, found),
        security=security,
        secrets=secrets,
        secrets_error=secrets_error,
        redactor=redactor,
        score_inline=score_inline,
        keeps_events=score_inline and not hosted,
    )


def _workspace_of(run: Run) -> Workspace:
    # Only the workspace's id is needed; the claim does not load the workspace row.
    return run.workspace if Run.workspace.is_cached(run) else Workspace(pk=run.workspace_id)


def _security_policy(case_run: CaseRun, pack: PackManifest) -> SecurityPolicy | None:
    try:
        return SecurityPolicy.from_manifest(pack.manifest)
    except Exception:  # the attempt reads the same manifest and reports the failure
        logger.exception("reading the security policy of case run %s failed", case_run.pk)
        return None


def _secrets_needed(case_run: CaseRun, pack: PackManifest) -> bool:
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
        return bool(secret_keys_used(pack.manifest))
    except Exception:  # noqa: BLE001 - the attempt reads the same manifest and reports the failure
        return True


def _secrets(case_run: CaseRun, pack: PackManifest) -> tuple[dict[str, str], str | None]:
    """(the workspace's secrets, in memory; an error when they could not be read)."""
    if not _secrets_needed(case_run, pack):
        return {}, None
    try:
        return secrets_resolve_for_run(workspace=_workspace_of(case_run.run)), None
    except Exception as exc:
        logger.exception("loading secrets for case run %s failed", case_run.pk)
        return {}, f"could not load workspace secrets: {type(exc).__name__}"

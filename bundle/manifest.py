"""Manifest JSON (spec §6.1), its checksum, the inverse mapping, and publish rows (§6.2)."""

from __future__ import annotations

import copy
import hashlib
import json
from typing import Any

from bundle.validate.composed_tools import iter_placeholders, placeholder_reference

SCHEMA_VERSION = 1


def canonical_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def checksum_of(value: Any) -> str:
    return hashlib.sha256(canonical_json(value).encode("utf-8")).hexdigest()


def _nonempty(target: dict[str, Any], source: dict[str, Any], *keys: str) -> None:
    for key in keys:
        value = source.get(key)
        if value not in (None, "", [], {}, 0):
            target[key] = value


def build_manifest(bundle: dict[str, Any]) -> dict[str, Any]:
    bundle = copy.deepcopy(bundle)
    pack = bundle.get("pack") or {}
    version = bundle.get("version") or {}
    manifest_pack = {"slug": pack.get("slug", ""), "name": pack.get("name", ""), "family": pack.get("family", "")}
    _nonempty(manifest_pack, pack, "description")

    manifest_version: dict[str, Any] = {"number": version.get("number", 0), "assets": version.get("assets") or None}
    _nonempty(manifest_version, version, "execution_mode")
    sandbox = version.get("sandbox")
    if sandbox is not None:
        manifest_version["sandbox_template_id"] = sandbox.get("sandbox_template_id", "")
    defaults = version.get("deployment_defaults")
    if defaults:
        manifest_version["deployment_defaults"] = {k: v for k, v in defaults.items() if k in ("aliases", "lineups") and v}

    manifest: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "pack": manifest_pack,
        "version": manifest_version,
        "tool_policy": version.get("tool_policy"),
        "filesystem": version.get("filesystem"),
        "evaluation_spec": _spec(version.get("evaluation_spec") or {}),
        "challenges": [_challenge(c) for c in bundle.get("challenges") or ()],
        "input_sets": [_input_set(s) for s in bundle.get("input_sets") or ()],
    }
    for key in ("modality",):
        if bundle.get(key):
            manifest[key] = bundle[key]
    for key in ("interface_spec", "scenario", "tools", "security"):
        if bundle.get(key) is not None:
            manifest[key] = bundle[key]
    if sandbox is not None:
        manifest_sandbox: dict[str, Any] = {"network_access": bool(sandbox.get("network_access"))}
        _nonempty(
            manifest_sandbox,
            sandbox,
            "network_allowlist",
            "env_vars",
            "additional_packages",
            "sandbox_template_id",
        )
        manifest["sandbox"] = manifest_sandbox
    return manifest


def _spec(spec: dict[str, Any]) -> dict[str, Any]:
    out = dict(spec)
    out.setdefault("name", "")
    out.setdefault("version_number", 0)
    out.setdefault("judge_mode", "")
    out.setdefault("validators", [])
    out["metrics"] = spec.get("metrics") or None
    out.setdefault("runtime_limits", {})
    out.setdefault("pricing", {})
    scorecard = dict(spec.get("scorecard") or {})
    scorecard["dimensions"] = [{"key": d, "source": ""} if isinstance(d, str) else d for d in scorecard.get("dimensions") or []]
    scorecard.setdefault("normalization", {})
    out["scorecard"] = scorecard
    return out


def _challenge(challenge: dict[str, Any]) -> dict[str, Any]:
    out = {k: challenge.get(k, "") for k in ("key", "title", "category", "difficulty")}
    _nonempty(out, challenge, "instructions", "definition", "assets", "artifact_refs")
    return out


def _input_set(input_set: dict[str, Any]) -> dict[str, Any]:
    out = {"key": input_set.get("key", ""), "name": input_set.get("name", "")}
    _nonempty(out, input_set, "description")
    cases = [_case(c) for c in input_set.get("cases") or ()]
    if cases:
        out["cases"] = cases
    return out


def _entries(items: list[dict[str, Any]] | None) -> list[dict[str, Any]] | None:
    if not items:
        return None
    result = []
    for item in items:
        entry = {k: v for k, v in item.items() if k != "value" and v not in (None, "")}
        if item.get("value") is not None:
            entry["value"] = item["value"]
        result.append(entry)
    return result


def _case(case: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {
        "challenge_key": case.get("challenge_key", ""),
        "case_key": case.get("case_key", ""),
        "item_key": case.get("item_key", ""),
    }
    _nonempty(out, case, "payload")
    for key in ("inputs", "expectations"):
        entries = _entries(case.get(key))
        if entries:
            out[key] = entries
    _nonempty(out, case, "user_simulator", "artifacts", "assets", "case_timeout_seconds")
    return out


def bundle_from_manifest(manifest: dict[str, Any]) -> dict[str, Any]:
    """Inverse of ``build_manifest``: a bundle that processes to the same manifest."""
    m = copy.deepcopy(manifest)
    m.pop("schema_version", None)
    version = m.pop("version", {}) or {}
    template_id = version.pop("sandbox_template_id", None)
    for key in ("tool_policy", "filesystem", "evaluation_spec"):
        value = m.pop(key, None)
        if value is not None:
            version[key] = value
    if version.get("assets") is None:
        version.pop("assets", None)
    sandbox = m.pop("sandbox", None)
    if sandbox is not None or template_id is not None:
        sandbox = sandbox or {}
        if template_id:
            sandbox["sandbox_template_id"] = template_id
        version["sandbox"] = sandbox
    m["version"] = version
    return m


def referenced_secrets(manifest: dict[str, Any]) -> list[str]:
    names: set[str] = set()
    for tool in (manifest.get("tools") or {}).get("custom") or ():
        if not isinstance(tool, dict):
            continue
        implementation = tool.get("implementation")
        if isinstance(implementation, dict):
            _collect_secrets(implementation.get("args"), names)
    return sorted(names)


def _collect_secrets(value: Any, names: set[str]) -> None:
    if isinstance(value, str):
        for inner, closed in iter_placeholders(value):
            ref = placeholder_reference(inner) if closed else ""
            if ref.startswith("secrets.") and ref[len("secrets.") :].strip():
                names.add(ref[len("secrets.") :])
    elif isinstance(value, dict):
        for item in value.values():
            _collect_secrets(item, names)
    elif isinstance(value, list):
        for item in value:
            _collect_secrets(item, names)


_CASE_DOCUMENT_KEYS = (
    "inputs",
    "expectations",
    "user_simulator",
    "artifacts",
    "assets",
    "case_timeout_seconds",
)


def stored_case_payload(case: dict[str, Any]) -> dict[str, Any]:
    """§6.2: plain payload, or a ``schema_version: 1`` document when the case has more."""
    if not any(case.get(key) for key in _CASE_DOCUMENT_KEYS):
        return case.get("payload") or {}
    document: dict[str, Any] = {"schema_version": 1, "case_key": case.get("case_key", "")}
    if case.get("payload"):
        document["payload"] = case["payload"]
    for key in _CASE_DOCUMENT_KEYS:
        if case.get(key):
            document[key] = case[key]
    return document


def publication_rows(manifest: dict[str, Any]) -> dict[str, Any]:
    """Rows ``pack_publish`` writes (spec §6.2), as plain dicts."""
    pack = manifest.get("pack") or {}
    version = manifest.get("version") or {}
    spec = manifest.get("evaluation_spec") or {}
    challenges = []
    for order, challenge in enumerate(manifest.get("challenges") or ()):
        challenges.append(
            {
                "key": challenge.get("key", ""),
                "title": challenge.get("title", ""),
                "category": challenge.get("category", ""),
                "difficulty": challenge.get("difficulty", ""),
                "instructions": challenge.get("instructions", ""),
                "definition": challenge.get("definition") or {},
                "assets": challenge.get("assets") or [],
                "artifact_refs": challenge.get("artifact_refs") or [],
                "execution_order": order,
            }
        )
    input_sets = []
    for input_set in manifest.get("input_sets") or ():
        cases = input_set.get("cases") or []
        input_sets.append(
            {
                "key": input_set.get("key", ""),
                "name": input_set.get("name", ""),
                "description": input_set.get("description", ""),
                "checksum": checksum_of(cases),
                "cases": [
                    {
                        "challenge_key": case.get("challenge_key", ""),
                        "case_key": case.get("case_key", ""),
                        "item_key": case.get("case_key") or case.get("item_key", ""),
                        "payload": case.get("payload") or {},
                        "stored_payload": stored_case_payload(case),
                        "inputs": case.get("inputs") or [],
                        "expectations": case.get("expectations") or [],
                        "artifacts": case.get("artifacts") or [],
                        "assets": case.get("assets") or [],
                        "user_simulator": case.get("user_simulator"),
                        "case_timeout_seconds": case.get("case_timeout_seconds") or 0,
                        "order": index,
                    }
                    for index, case in enumerate(cases)
                ],
            }
        )
    return {
        "pack": {
            "slug": pack.get("slug", ""),
            "name": pack.get("name", ""),
            "family": pack.get("family", ""),
            "description": pack.get("description", ""),
        },
        "version": {
            "number": version.get("number", 0),
            "execution_mode": version.get("execution_mode") or "native",
            "manifest": manifest,
            "checksum": checksum_of(manifest),
            "referenced_secrets": referenced_secrets(manifest),
            "is_security_pack": (pack.get("family") == "security" or "security" in manifest),
        },
        "evaluation_spec": {
            "name": spec.get("name", ""),
            "version_number": spec.get("version_number", 0),
            "judge_mode": spec.get("judge_mode", ""),
            "definition": spec,
        },
        "challenges": challenges,
        "input_sets": input_sets,
    }

"""A reader's summary of a manifest for the version page: so nobody has to read JSON to understand it."""

from __future__ import annotations

import json
from typing import Any


def _schema_parameters(schema: Any) -> list[dict[str, Any]]:
    if not isinstance(schema, dict):
        return []
    properties = schema.get("properties") or {}
    required = set(schema.get("required") or [])
    if not isinstance(properties, dict):
        return []
    rows = []
    for name, prop in properties.items():
        prop = prop if isinstance(prop, dict) else {}
        kind = prop.get("type", "any")
        rows.append(
            {
                "name": name,
                "type": " | ".join(kind) if isinstance(kind, list) else str(kind),
                "required": name in required,
                "description": prop.get("description", ""),
            }
        )
    return rows


def composed_tools(manifest: dict[str, Any]) -> list[dict[str, Any]]:
    tools = []
    for raw in (manifest.get("tools") or {}).get("custom") or []:
        if not isinstance(raw, dict):
            continue
        implementation = raw.get("implementation")
        if not isinstance(implementation, dict):
            implementation = {}
        is_mock = str(implementation.get("type", "")).strip().lower() == "mock"
        tools.append(
            {
                "name": raw.get("name") or "(unnamed)",
                "description": raw.get("description", ""),
                "primitive": "mock" if is_mock else implementation.get("primitive", ""),
                "is_mock": is_mock,
                "parameters": _schema_parameters(raw.get("parameters")),
                "args": json.dumps(implementation.get("args"), indent=2, ensure_ascii=False) if implementation.get("args") else "",
            }
        )
    return tools


def _dimension(raw: Any) -> dict[str, Any]:
    if isinstance(raw, str):
        return {"key": raw, "source": "", "weight": None, "gate": False, "pass_threshold": None}
    raw = raw if isinstance(raw, dict) else {}
    return {
        "key": raw.get("key", ""),
        "source": raw.get("source", ""),
        "weight": raw.get("weight"),
        "gate": bool(raw.get("gate")),
        "pass_threshold": raw.get("pass_threshold"),
        "validators": raw.get("validators") or [],
    }


def evaluation_summary(manifest: dict[str, Any]) -> dict[str, Any]:
    spec = manifest.get("evaluation_spec") or {}
    scorecard = spec.get("scorecard") or {}
    return {
        "name": spec.get("name", ""),
        "version_number": spec.get("version_number"),
        "judge_mode": spec.get("judge_mode", ""),
        "strategy": scorecard.get("strategy", ""),
        "pass_threshold": scorecard.get("pass_threshold"),
        "validators": [
            {"key": v.get("key", ""), "type": v.get("type", ""), "target": v.get("target", ""), "expected_from": v.get("expected_from", "")}
            for v in spec.get("validators") or []
            if isinstance(v, dict)
        ],
        "metrics": [
            {"key": m.get("key", ""), "type": m.get("type", ""), "collector": m.get("collector", ""), "unit": m.get("unit", "")}
            for m in spec.get("metrics") or []
            if isinstance(m, dict)
        ],
        "dimensions": [_dimension(d) for d in scorecard.get("dimensions") or []],
        "judges": [
            {
                "key": j.get("key", ""),
                "mode": j.get("mode", ""),
                "models": j.get("models") or ([j["model"]] if j.get("model") else []),
                "samples": j.get("samples"),
            }
            for j in spec.get("llm_judges") or []
            if isinstance(j, dict)
        ],
        "runtime_limits": spec.get("runtime_limits") or {},
        "post_execution_checks": [c for c in spec.get("post_execution_checks") or [] if isinstance(c, dict)],
    }


def tool_policy_summary(manifest: dict[str, Any]) -> dict[str, Any]:
    policy = manifest.get("tool_policy") or {}
    tools = manifest.get("tools") or {}
    others = {k: v for k, v in policy.items() if k not in ("allowed_tool_kinds", "allow_shell", "allow_network")}
    return {
        "present": bool(policy) or bool(tools.get("allowed")) or bool(tools.get("denied")),
        "allowed_tool_kinds": policy.get("allowed_tool_kinds") or [],
        "allow_shell": bool(policy.get("allow_shell")),
        "allow_network": bool(policy.get("allow_network")),
        "others": json.dumps(others, indent=2, ensure_ascii=False) if others else "",
        "allowed_tools": tools.get("allowed") or [],
        "denied_tools": tools.get("denied") or [],
    }


def sandbox_summary(manifest: dict[str, Any]) -> dict[str, Any] | None:
    sandbox = manifest.get("sandbox")
    if sandbox is None:
        return None
    return {
        "network_access": bool(sandbox.get("network_access")),
        "network_allowlist": sandbox.get("network_allowlist") or [],
        # Sandbox env vars are literal by rule (spec §7.1); ${…} values are rejected at run start.
        "env_vars": sorted((sandbox.get("env_vars") or {}).items()),
        "additional_packages": sandbox.get("additional_packages") or [],
        "template_id": sandbox.get("sandbox_template_id") or (manifest.get("version") or {}).get("sandbox_template_id") or "",
    }


def version_summary(manifest: dict[str, Any]) -> dict[str, Any]:
    return {
        "tool_policy": tool_policy_summary(manifest),
        "composed_tools": composed_tools(manifest),
        "sandbox": sandbox_summary(manifest),
        "evaluation": evaluation_summary(manifest),
        "modality": manifest.get("modality", ""),
        "is_security_pack": (manifest.get("pack") or {}).get("family") == "security" or "security" in manifest,
    }

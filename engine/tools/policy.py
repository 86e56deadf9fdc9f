"""Which primitives a runtime may use and which names the model sees (runtime.md §2.1)."""

from __future__ import annotations

from typing import Any

from engine.sandbox.base import SandboxConfig
from engine.tools.registry import PrimitiveSpec


def available_primitives(specs: dict[str, PrimitiveSpec], config: SandboxConfig) -> set[str]:
    """Step 1: submit + primitives whose kind is allowed (+ exec iff allow_shell)."""
    names = set()
    for name, spec in specs.items():
        if spec.kind == "always" or (spec.kind == "shell" and config.allow_shell):
            names.add(name)
        elif spec.kind not in ("always", "shell") and config.kind_allowed(spec.kind):
            names.add(name)
    return names


def _names(value: Any) -> list[str]:
    if not isinstance(value, list):
        return []
    return [v.strip() for v in value if isinstance(v, str) and v.strip()]


def filter_primitives(available: set[str], tools_block: dict[str, Any]) -> set[str]:
    """Steps 2–3: manifest tools.allowed / tools.denied; submit always re-added."""
    visible = set(available)
    allowed = _names(tools_block.get("allowed"))
    if allowed:
        visible &= set(allowed)
    visible.add("submit")
    visible -= set(_names(tools_block.get("denied")))
    visible.add("submit")
    return visible


def deployment_denied(deployment_config: dict[str, Any] | None) -> set[str]:
    """Step 7: deployment snapshot ``tool_overrides.denied``."""
    overrides = (deployment_config or {}).get("tool_overrides") or {}
    return set(_names(overrides.get("denied"))) - {"submit"}


def sandbox_overrides(deployment_config: dict[str, Any] | None) -> dict[str, Any]:
    """Runtime-profile sandbox overrides carried in the deployment snapshot, wherever they sit."""
    cfg = deployment_config or {}
    profile = cfg.get("runtime_profile") or {}
    for candidate in (
        (profile.get("profile_config") or {}).get("sandbox") if isinstance(profile, dict) else None,
        (cfg.get("profile_config") or {}).get("sandbox") if isinstance(cfg.get("profile_config"), dict) else None,
        cfg.get("sandbox"),
    ):
        if isinstance(candidate, dict):
            return candidate
    return {}

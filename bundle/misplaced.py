"""Keys the format ignores, and the one misplaced block we read where the author meant it.

The reference decoder silently drops unknown keys outside ``version.evaluation_spec`` (spec
§1.1). Three real packs put their ``tools:`` under ``version:`` and lose every tool that way, so
we read ``version.tools`` as the pack's top-level ``tools`` (docs/pack-format-differences.md)
and warn. Every other dropped key gets a warning too, with a hint when the key belongs
somewhere else.
"""

from __future__ import annotations

from typing import Any

from bundle.schema import BUNDLE, VERSION

VERSION_TOOLS = "version.tools"
_NO_PACK_TOOLS_MODES = ("prompt_eval", "responses")
_TOP_LEVEL_KEYS = frozenset(BUNDLE.fields)
_VERSION_KEYS = frozenset(VERSION.fields) - {"tools"}


def read_misplaced(bundle: dict[str, Any], ignored: list[tuple[str, int]]) -> tuple[list[tuple[str, str]], dict[str, str]]:
    """Hoist ``version.tools`` (in place) and describe what was ignored.

    Returns ``(warnings, relocations)``: warnings as ``(path, message)`` and, when tools were
    hoisted, ``{"tools": "version.tools"}`` so problems found in them point at the YAML the
    author wrote.
    """
    warnings = [(path, _ignored_message(path)) for path, _line in ignored]
    relocations: dict[str, str] = {}
    version = bundle.get("version")
    if not isinstance(version, dict) or "tools" not in version:
        return warnings, relocations
    tools = version.pop("tools")
    mode = version.get("execution_mode") or ""
    if not isinstance(tools, dict):
        warnings.append((VERSION_TOOLS, "is ignored: tools belong at the top level of the bundle and must be a mapping"))
    elif "tools" in bundle:
        warnings.append((VERSION_TOOLS, "is ignored: the bundle also has top-level tools, which are the ones used; move these there"))
    elif mode in _NO_PACK_TOOLS_MODES:
        warnings.append((VERSION_TOOLS, f"is ignored: packs with execution_mode {mode} have no pack-defined tools"))
    else:
        bundle["tools"] = tools
        relocations["tools"] = VERSION_TOOLS
        warnings.append(
            (
                VERSION_TOOLS,
                "is read as the pack's tools: tools belong at the top level of the bundle "
                "(the reference format ignores them under version:); move them there",
            )
        )
    return warnings, relocations


def _ignored_message(path: str) -> str:
    key = path.rsplit(".", 1)[-1]
    if "." in path and key in _TOP_LEVEL_KEYS:
        return f"is ignored: {key} belongs at the top level of the bundle"
    if "." not in path and key in _VERSION_KEYS:
        return f"is ignored: {key} belongs under version:"
    return "is not part of the pack format and is ignored"


def relocate(path: str, relocations: dict[str, str]) -> str:
    for old, new in relocations.items():
        if path == old or path.startswith((f"{old}.", f"{old}[")):
            return new + path[len(old) :]
    return path

"""Tool warnings: mock tools without a response, delegates that do not exist, assertions on
tools nobody can call."""

from __future__ import annotations

import difflib
from typing import Any

from bundle.validate.common import Report
from bundle.validate.composed_tools import is_mock

SPEC = "version.evaluation_spec"
# Spec §2.7 names the mock strategies and how an absent one is inferred.
MOCK_STRATEGIES = ("static", "lookup", "echo")
# What the engine's MockTool answers for a static mock without a response (engine/tools/mock.py).
GENERIC_MOCK_RESULT = '{{"status": "ok", "mock": true, "tool": "{name}", "arguments": {{…}}}}'
_STOPS = "runs of this pack stop when they build the tool set"


def custom_tools(bundle: dict[str, Any]) -> list[tuple[int, dict[str, Any]]]:
    tools = bundle.get("tools")
    custom = tools.get("custom") if isinstance(tools, dict) else None
    if not isinstance(custom, list):
        return []
    return [(i, tool) for i, tool in enumerate(custom) if isinstance(tool, dict)]


def tool_name(tool: dict[str, Any]) -> str:
    name = tool.get("name")
    return name.strip() if isinstance(name, str) else ""


def lint_tools(bundle: dict[str, Any], primitives: frozenset[str] | None, report: Report) -> set[str]:
    """Warn on mock and composed tools; returns the names of tools hidden from the model."""
    tools = custom_tools(bundle)
    for i, tool in tools:
        implementation = tool.get("implementation")
        if is_mock(implementation):
            assert isinstance(implementation, dict)
            _lint_mock(tool_name(tool), implementation, f"tools.custom[{i}].implementation", report)
    return set() if primitives is None else _lint_delegates(tools, primitives, report)


def _mock_strategy(implementation: dict[str, Any]) -> str:
    strategy = implementation.get("strategy")
    if isinstance(strategy, str) and strategy.strip():
        return strategy.strip().lower()
    if "lookup_key" in implementation or "responses" in implementation:
        return "lookup"
    if "template" in implementation:
        return "echo"
    return "static"


def _lint_mock(name: str, implementation: dict[str, Any], base: str, report: Report) -> None:
    strategy = _mock_strategy(implementation)
    shown = name or "(unnamed)"
    if strategy == "static" and "response" not in implementation:
        report.add(
            base,
            f'mock tool "{shown}" has no response: every call returns the generic mock result {GENERIC_MOCK_RESULT.format(name=shown)}',
        )
    elif strategy == "lookup":
        key, responses = implementation.get("lookup_key"), implementation.get("responses")
        if not isinstance(key, str) or not key.strip() or not isinstance(responses, dict):
            report.add(base, f'mock tool "{shown}" needs lookup_key and a responses map: {_STOPS}')
    elif strategy == "echo" and not isinstance(implementation.get("template"), dict):
        report.add(base, f'mock tool "{shown}" needs a template object: {_STOPS}')
    elif strategy not in MOCK_STRATEGIES:
        report.add(f"{base}.strategy", f'"{strategy}" is not a mock strategy (static, lookup, echo): {_STOPS}')


def _lint_delegates(tools: list[tuple[int, dict[str, Any]]], primitives: frozenset[str], report: Report) -> set[str]:
    """Like the engine's registry build: a composed tool whose delegate does not exist is hidden,
    and so is one delegating to a hidden tool (iteratively)."""
    delegates: dict[str, tuple[int, str]] = {}
    for i, tool in tools:
        implementation = tool.get("implementation")
        name = tool_name(tool)
        if not name or not isinstance(implementation, dict) or is_mock(implementation):
            continue
        primitive = implementation.get("primitive")
        if isinstance(primitive, str) and primitive.strip():
            delegates.setdefault(name, (i, primitive.strip()))
    known = {tool_name(tool) for _, tool in tools} - {""}
    hidden: dict[str, str] = {}
    for name, (i, delegate) in delegates.items():
        if delegate not in primitives and delegate not in known:
            hidden[name] = delegate
            report.add(
                f"tools.custom[{i}].implementation.primitive",
                f'"{delegate}" is neither a primitive of this installation{_suggestion(delegate, primitives)} '
                f'nor a tool of this pack: tool "{name}" is hidden from the model',
            )
    changed = True
    while changed:
        changed = False
        for name, (i, delegate) in delegates.items():
            if name not in hidden and delegate in hidden:
                hidden[name] = delegate
                changed = True
                report.add(
                    f"tools.custom[{i}].implementation.primitive",
                    f'delegates to tool "{delegate}", which is hidden: tool "{name}" is hidden from the model too',
                )
    return set(hidden)


def _suggestion(name: str, primitives: frozenset[str]) -> str:
    close = difflib.get_close_matches(name, sorted(primitives), n=1, cutoff=0.6)
    if not close:
        contained = sorted(p for p in primitives if p in name)  # shell_exec -> exec
        close = [max(contained, key=len)] if contained else []
    if close:
        return f' (did you mean "{close[0]}"?)'
    return f" (it has {', '.join(sorted(primitives))})"


def lint_tool_assertions(bundle: dict[str, Any], primitives: frozenset[str] | None, hidden: set[str], report: Report) -> None:
    """A tool_call_assertion about a tool the agent cannot call can never see that call."""
    declared = {tool_name(tool) for _, tool in custom_tools(bundle)} - {""}
    spec = (bundle.get("version") or {}).get("evaluation_spec") or {}
    for i, validator in enumerate(spec.get("validators") or ()):
        if not isinstance(validator, dict) or validator.get("type") != "tool_call_assertion":
            continue
        config = validator.get("config")
        if not isinstance(config, dict):
            continue
        base = f"{SPEC}.validators[{i}].config"
        named = [(f"{base}.tool_name", config.get("tool_name"))]
        ordered = config.get("ordered_tools")
        if isinstance(ordered, list):
            named += [(f"{base}.ordered_tools[{j}]", item) for j, item in enumerate(ordered)]
        for path, name in named:
            if not isinstance(name, str) or not name.strip():
                continue
            name = name.strip()
            if name in hidden:
                report.add(path, f'names tool "{name}", which is hidden from the model: the agent can never call it')
            elif name not in declared and primitives is not None and name not in primitives:
                report.add(
                    path,
                    f'names tool "{name}", which is neither a tool of this pack nor a primitive of this installation: '
                    "the agent can never call it",
                )

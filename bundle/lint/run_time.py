"""Constructs that validate (the reference checks them only at run time) and then fail every run.

Runs refuse a pack with no input sets; the scorer records a metric whose collector it does not
have as an error, which makes every case invalid; the engine's tool-registry build
(engine/tools/composed.py ``parse_custom``) refuses a composed or mock tool without a name, two
tools of one name, a tool named like a primitive the tool policy enables, a delegating tool with
empty ``args``, and a tool that uses secrets and sets ``output_path``. Each is a warning, saying
what the run will say. (The two rules whose breach is certain and dangerous, secrets outside
``http_request`` and ``${…}`` in env vars, are errors: bundle/validate/tool_secrets.py,
bundle/validate/sandbox.py.)
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Mapping
from typing import Any

from bundle.lint.tools import custom_tools, tool_name
from bundle.validate.common import Report
from bundle.validate.composed_tools import is_mock
from bundle.validate.tool_secrets import first_secret

_STOPS = "runs of this pack stop when they build the tool set"
_SPEC = "version.evaluation_spec"


def lint_run_time(bundle: dict[str, Any], primitive_kinds: Mapping[str, str], metric_collectors: frozenset[str], report: Report) -> None:
    """``primitive_kinds`` and ``metric_collectors`` describe the installation; empty skips their checks."""
    _lint_input_sets(bundle, report)
    if metric_collectors:
        _lint_collectors(bundle, metric_collectors, report)
    version = bundle.get("version") or {}
    if version.get("execution_mode") == "prompt_eval":
        return  # no tool set is built (and prompt_eval packs may have no tools)
    enabled = _enabled_primitives(version.get("tool_policy"), primitive_kinds) if primitive_kinds else {}
    seen: dict[str, int] = {}
    for i, tool in custom_tools(bundle):
        base = f"tools.custom[{i}]"
        name = tool_name(tool)
        if not name:
            report.add(f"{base}.name", f"is required: {_STOPS} (tool name is required)")
        elif name in seen:
            report.add(
                f"{base}.name", f'"{name}" is also the name of tools.custom[{seen[name]}]: {_STOPS} (tool "{name}" is already defined)'
            )
        elif name in enabled:
            report.add(
                f"{base}.name",
                f'"{name}" is also the name of a primitive {enabled[name]}: {_STOPS} (tool "{name}" is already defined); rename the tool',
            )
        if name:
            seen.setdefault(name, i)
        implementation = tool.get("implementation")
        if isinstance(implementation, dict) and not is_mock(implementation):
            _lint_delegation(name or f"#{i + 1}", implementation, f"{base}.implementation", report)


def _lint_input_sets(bundle: dict[str, Any], report: Report) -> None:
    if bundle.get("input_sets"):
        return
    refused = "runs of this pack are refused (this pack version has no input sets, so there is nothing to run); add an input set with at least one case"
    if "input_sets" in bundle:
        report.add("input_sets", f"is empty: {refused}")
    else:
        report.add("", f"the bundle has no input_sets: {refused}")  # no line to point at


def _lint_collectors(bundle: dict[str, Any], collectors: frozenset[str], report: Report) -> None:
    spec = (bundle.get("version") or {}).get("evaluation_spec") or {}
    dimensions = (spec.get("scorecard") or {}).get("dimensions") or ()
    for i, metric in enumerate(spec.get("metrics") or ()):
        collector = metric.get("collector") if isinstance(metric, dict) else None
        if not isinstance(collector, str) or not collector.strip() or collector in collectors:
            continue  # blank is an error already
        key = metric.get("key")
        used = [d.get("key") for d in dimensions if isinstance(d, dict) and d.get("source") == "metric" and d.get("metric") == key]
        then = f', and so is dimension "{used[0]}", which makes every case invalid' if used else ", which makes every case invalid"
        report.add(
            f"{_SPEC}.metrics[{i}].collector",
            f'"{collector}" is not a collector of this installation{_close(collector, collectors)}: the metric is an error in every '
            f"scored case{then}",
        )


def _close(name: str, known: frozenset[str]) -> str:
    close = difflib.get_close_matches(name, sorted(known), n=1, cutoff=0.6)
    return f' (did you mean "{close[0]}"?)' if close else ""


def _enabled_primitives(policy: Any, kinds: Mapping[str, str]) -> dict[str, str]:
    """Primitives this pack's tool policy enables (engine/tools/policy.py ``available_primitives``),
    each with the reason, for messages."""
    policy = policy if isinstance(policy, dict) else {}
    raw = policy.get("allowed_tool_kinds")
    allowed = {k.strip().lower() for k in raw if isinstance(k, str) and k.strip()} if isinstance(raw, list) else set()
    enabled: dict[str, str] = {}
    for name, kind in kinds.items():
        if kind == "always":
            enabled[name] = "every run has"
        elif kind == "shell":
            if policy.get("allow_shell") is True:
                enabled[name] = "this pack enables (allow_shell: true)"
        elif not allowed or kind in allowed:
            enabled[name] = f'this pack\'s tool policy enables (kind "{kind}")'
    return enabled


def _lint_delegation(name: str, implementation: dict[str, Any], base: str, report: Report) -> None:
    args = implementation.get("args")
    if "args" in implementation and (args is None or args == {}):
        report.add(f"{base}.args", f'is empty: {_STOPS} (tool "{name}": implementation.args must be a non-empty object)')
        return
    if not isinstance(args, dict) or "output_path" not in args or implementation.get("primitive") != "http_request":
        return  # a secret given to any other primitive is an error already
    out = args["output_path"]
    if (out is None or (isinstance(out, str) and not out.strip())) or first_secret(args, f"{base}.args") is None:
        return
    report.add(
        f"{base}.args.output_path",
        f'is set on a tool that uses secrets: {_STOPS} (tool "{name}": a tool that uses secrets cannot set output_path)',
    )


def lint_sandbox_template(bundle: dict[str, Any], template_ids: Callable[[], frozenset[str]], report: Report) -> None:
    """``sandbox_template_id`` names an operator's template (docs/operations.md); runs of a pack whose
    template this installation does not define are refused at creation."""
    sandbox = (bundle.get("version") or {}).get("sandbox")
    template = sandbox.get("sandbox_template_id") if isinstance(sandbox, dict) else None
    if not isinstance(template, str) or not template.strip():
        return
    templates = template_ids()
    if template.strip() in templates:
        return
    report.add(
        "version.sandbox.sandbox_template_id",
        f'"{template}" is not a sandbox template of this installation{_close(template, templates)}: runs of this pack are refused until an operator '
        "defines it (admin, Sandbox templates)",
    )

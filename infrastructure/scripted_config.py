"""Shape of ``deployment_config`` for the ``scripted`` provider (see engine/providers/scripted.py).

``{"script": {"default": [STEP…], "cases": {"<case_key>": [STEP…]}}, "judge_responses"?: str | [str],
"replies"?: [RULE…], "latency_ms"?: number}``, or a stochastic agent with ``"script_mix": [{"weight":
number > 0, "script": {…}}, …]`` (one drawn per trial) and ``"seed"?: int`` in place of ``script``; STEP is ``{"tool": NAME, "args": {…}}``, ``{"tools": [{"tool", "args"}…]}``,
``{"submit": "answer"}`` or ``{"text": "…"}``, and RULE is ``{"about"?, "when"?, "unless"?: str | [str],
"purpose"?: str, "reply": str | object}``. A deployment that only judges or plays a user simulator
may have ``replies`` or ``judge_responses`` and no script. Errors name the offending path.
"""

from __future__ import annotations

import math
from typing import Any

STEP_KINDS = ("tool", "tools", "submit", "text")
RULE_FIELDS = ("about", "when", "unless", "purpose", "reply")


def _call_errors(call: Any, path: str) -> list[str]:
    if not isinstance(call, dict):
        return [f'{path}: must be an object like {{"tool": "read_file", "args": {{…}}}}']
    errors = []
    extra = sorted(set(call) - {"tool", "args"})
    if extra:
        errors.append(f"{path}: unknown field(s) {', '.join(extra)}; a call has only tool and args")
    if not isinstance(call.get("tool"), str) or not call.get("tool", "").strip():
        errors.append(f"{path}.tool: must be the tool's name")
    if "args" in call and not isinstance(call["args"], dict):
        errors.append(f"{path}.args: must be an object")
    return errors


def _step_errors(step: Any, path: str) -> list[str]:
    if not isinstance(step, dict):
        return [f"{path}: must be an object with one of {', '.join(STEP_KINDS)}"]
    kinds = [kind for kind in STEP_KINDS if kind in step]
    if len(kinds) != 1:
        found = f" (found {', '.join(kinds)})" if kinds else ""
        return [f"{path}: must have exactly one of {', '.join(STEP_KINDS)}{found}"]
    kind = kinds[0]
    if kind == "tool":
        return _call_errors(step, path)
    extra = sorted(set(step) - {kind})
    if extra:
        return [f"{path}: unknown field(s) {', '.join(extra)} next to {kind}"]
    if kind == "tools":
        calls = step["tools"]
        if not isinstance(calls, list) or not calls:
            return [f"{path}.tools: must be a non-empty list of calls"]
        return [error for i, call in enumerate(calls) for error in _call_errors(call, f"{path}.tools[{i}]")]
    if not isinstance(step[kind], str):
        return [f"{path}.{kind}: must be a string"]
    return []


def _steps_errors(steps: Any, path: str) -> list[str]:
    if not isinstance(steps, list):
        return [f"{path}: must be a list of steps"]
    return [error for i, step in enumerate(steps) for error in _step_errors(step, f"{path}[{i}]")]


def scripted_config_errors(config: Any, *, prefix: str = "deployment_config") -> list[str]:
    if not isinstance(config, dict):
        return [f"{prefix}: must be a JSON object"]
    script, mix = config.get("script"), config.get("script_mix")
    if script is not None and mix is not None:
        return [f"{prefix}.script_mix: use script or script_mix, not both"]
    if mix is not None:
        errors = _mix_errors(mix, f"{prefix}.script_mix")
    elif script is None:
        if "replies" in config or "judge_responses" in config:
            return _answers_errors(config, prefix)
        return [f'{prefix}.script: a scripted deployment needs a script, e.g. {{"script": {{"default": [{{"submit": "answer"}}]}}}}']
    else:
        errors = _script_errors(script, f"{prefix}.script")
    return errors + _seed_errors(config, prefix) + _answers_errors(config, prefix) + _latency_errors(config, prefix)


def _script_errors(script: Any, path: str) -> list[str]:
    if not isinstance(script, dict):
        return [f"{path}: must be an object with default and/or cases"]
    errors: list[str] = []
    extra = sorted(set(script) - {"default", "cases"})
    if extra:
        errors.append(f"{path}: unknown field(s) {', '.join(extra)}; use default and cases")
    if "default" not in script and "cases" not in script:
        errors.append(f"{path}: needs default and/or cases")
    if "default" in script:
        errors += _steps_errors(script["default"], f"{path}.default")
    if "cases" in script:
        cases = script["cases"]
        if not isinstance(cases, dict):
            errors.append(f"{path}.cases: must be an object mapping case keys to step lists")
        else:
            for case_key, steps in cases.items():
                errors += _steps_errors(steps, f"{path}.cases.{case_key}")
    return errors


def _mix_errors(mix: Any, path: str) -> list[str]:
    """``script_mix``: weighted scripts, one drawn per trial (engine/providers/scripted.py)."""
    if not isinstance(mix, list) or not mix:
        return [f'{path}: must be a non-empty list like [{{"weight": 0.7, "script": {{…}}}}, {{"weight": 0.3, "script": {{…}}}}]']
    errors: list[str] = []
    for i, entry in enumerate(mix):
        at = f"{path}[{i}]"
        if not isinstance(entry, dict):
            errors.append(f'{at}: must be an object like {{"weight": 0.5, "script": {{"default": [STEP…]}}}}')
            continue
        extra = sorted(set(entry) - {"weight", "script"})
        if extra:
            errors.append(f"{at}: unknown field(s) {', '.join(extra)}; an entry has only weight and script")
        weight = entry.get("weight")
        if isinstance(weight, bool) or not isinstance(weight, (int, float)) or not math.isfinite(weight) or weight <= 0:
            errors.append(f"{at}.weight: must be a number greater than 0")
        if "script" not in entry:
            errors.append(f"{at}.script: is required")
        else:
            errors += _script_errors(entry["script"], f"{at}.script")
    return errors


def _seed_errors(config: dict[str, Any], prefix: str) -> list[str]:
    seed = config.get("seed")
    if seed is None or (isinstance(seed, int) and not isinstance(seed, bool)):
        return []
    return [f"{prefix}.seed: must be an integer"]


def _latency_errors(config: dict[str, Any], prefix: str) -> list[str]:
    latency = config.get("latency_ms")
    if latency is None or (isinstance(latency, (int, float)) and not isinstance(latency, bool) and 0 <= latency <= 600_000):
        return []
    return [f"{prefix}.latency_ms: must be a number of milliseconds from 0 to 600000"]


def _answers_errors(config: dict[str, Any], prefix: str) -> list[str]:
    """``judge_responses`` and ``replies``: what answers tool-less requests (judges, simulators)."""
    errors: list[str] = []
    judge = config.get("judge_responses")
    if judge is not None and not (isinstance(judge, str) or (isinstance(judge, list) and all(isinstance(item, str) for item in judge))):
        errors.append(f"{prefix}.judge_responses: must be a string or a list of strings")
    replies = config.get("replies")
    if replies is None:
        return errors
    if not isinstance(replies, list):
        return [*errors, f"{prefix}.replies: must be a list of rules"]
    for i, rule in enumerate(replies):
        path = f"{prefix}.replies[{i}]"
        if not isinstance(rule, dict):
            errors.append(f'{path}: must be an object like {{"when": ["text"], "reply": "answer"}}')
            continue
        extra = sorted(set(rule) - set(RULE_FIELDS))
        if extra:
            errors.append(f"{path}: unknown field(s) {', '.join(extra)}; a rule has {', '.join(RULE_FIELDS)}")
        if "reply" not in rule:
            errors.append(f"{path}.reply: is required")
        for key in ("about", "when", "unless"):
            value = rule.get(key)
            if value is not None and not (isinstance(value, str) or (isinstance(value, list) and all(isinstance(v, str) for v in value))):
                errors.append(f"{path}.{key}: must be a string or a list of strings")
        if rule.get("purpose") is not None and not isinstance(rule["purpose"], str):
            errors.append(f"{path}.purpose: must be a string (judge or user_simulator)")
    return errors

"""Per-case ``user_simulator`` (spec §2.14, §3.12)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from bundle.validate.cases import case_input_keys, validate_expectations
from bundle.validate.common import Report
from bundle.validate.templating import case_context, first_template_problem

ACTORS = ("scripted", "llm", "human")
TRIGGERS = (
    "always",
    "on_assistant_mismatch",
    "on_validator_fail",
    "on_judge_below",
    "on_agent_loop",
    "on_max_llm_turns",
    "manual",
    "never",
)


def validate_user_simulators(bundle: dict[str, Any], version_keys: set[str], report: Report) -> None:
    multi_turn = (bundle.get("version") or {}).get("execution_mode") == "multi_turn"
    for s, input_set in enumerate(bundle.get("input_sets") or ()):
        for c, case in enumerate(input_set.get("cases") or ()):
            prefix = f"input_sets[{s}].cases[{c}].user_simulator"
            simulator = case.get("user_simulator")
            if simulator is None:
                if multi_turn:
                    report.add(prefix, "is required when version.execution_mode is multi_turn")
                continue
            if not multi_turn:
                report.add(prefix, "is only allowed when version.execution_mode is multi_turn")
                continue
            _validate(simulator, case, prefix, version_keys, report)


@dataclasses.dataclass(slots=True)
class _Scope:
    """One case's simulator: where errors go and what its turns are checked against."""

    case: dict[str, Any]
    input_keys: set[str]
    version_keys: set[str]
    report: Report
    _context: dict[str, Any] | None = None

    def template_context(self) -> dict[str, Any]:
        """The case's template context, built on first use (most simulators need none)."""
        if self._context is None:
            self._context = case_context(self.case)
        return self._context


def _validate(sim: dict[str, Any], case: dict[str, Any], prefix: str, version_keys: set[str], report: Report) -> None:
    if sim.get("schema_version") != 1:
        report.add(f"{prefix}.schema_version", "must be 1")
    if sim.get("kind") != "hybrid":
        report.add(f"{prefix}.kind", 'must be "hybrid"')
    if (sim.get("max_turns") or 0) < 0:
        report.add(f"{prefix}.max_turns", "must be greater than or equal to 0")
    phases = sim.get("phases") or []
    if not phases:
        report.add(f"{prefix}.phases", "must contain at least one phase")
    scope = _Scope(case, case_input_keys(case), version_keys, report)
    ids: set[str] = set()
    for p, phase in enumerate(phases):
        _check_phase(phase, p, f"{prefix}.phases[{p}]", ids, scope)
    _check_calibration(sim.get("calibration") or {}, prefix, report)
    arena = (sim.get("post_run") or {}).get("arena") or {}
    if arena.get("enabled") and (arena.get("comparison") or "") not in ("", "pairwise"):
        report.add(f"{prefix}.post_run.arena.comparison", 'must be one of "pairwise"')


def _check_phase(phase: dict[str, Any], p: int, base: str, ids: set[str], scope: _Scope) -> None:
    report = scope.report
    phase_id = (phase.get("id") or "").strip()
    if not phase_id:
        report.add(f"{base}.id", "is required")
    elif phase_id in ids:
        report.add(f"{base}.id", "must be unique")
    ids.add(phase_id)
    actor = (phase.get("actor") or "").strip()
    if not actor:
        report.add(f"{base}.actor", "is required")
    elif actor not in ACTORS:
        report.add(f"{base}.actor", "must be one of scripted, llm, human")
    problem = _trigger_problem((phase.get("trigger") or "").strip(), first=p == 0)
    if problem:
        report.add(f"{base}.trigger", problem)
    if actor in _ACTOR_RULES:
        _ACTOR_RULES[actor](phase, base, scope)
    if actor and actor != "llm" and (phase.get("model") or "").strip():
        report.add(f"{base}.model", "is only valid on phases with actor: llm")


def _trigger_problem(trigger: str, *, first: bool) -> str | None:
    if trigger and trigger not in TRIGGERS:
        return "must be a supported trigger expression"
    if first and trigger not in ("", "always"):
        return 'first phase trigger must be empty or "always"'
    if not first and trigger in ("", "always"):
        return 'only the first phase may use "always"'
    return None


def _check_scripted(phase: dict[str, Any], base: str, scope: _Scope) -> None:
    turns = phase.get("turns") or []
    if not turns:
        scope.report.add(f"{base}.turns", "must contain at least one turn for scripted actor")
    for t, turn in enumerate(turns):
        _check_turn(turn, f"{base}.turns[{t}]", scope)


def _check_turn(turn: dict[str, Any], base: str, scope: _Scope) -> None:
    message = turn.get("message") or ""
    if not message.strip():
        scope.report.add(f"{base}.message", "is required for scripted turns")
    validate_expectations(turn.get("expects"), f"{base}.expects", scope.input_keys, scope.version_keys, scope.report)
    if message.strip():
        problem = first_template_problem(message, scope.template_context())
        if problem:
            scope.report.add(f"{base}.message", problem)


def _check_llm(phase: dict[str, Any], base: str, scope: _Scope) -> None:
    if not (phase.get("persona") or "").strip():
        scope.report.add(f"{base}.persona", "is required for llm actor")
    if (phase.get("max_turns") or 0) < 0:
        scope.report.add(f"{base}.max_turns", "must be greater than or equal to 0")
    for u, condition in enumerate(phase.get("until") or ()):
        if not (condition or "").strip():
            scope.report.add(f"{base}.until[{u}]", "must be a non-empty condition expression")


def _check_human(phase: dict[str, Any], base: str, scope: _Scope) -> None:
    if (phase.get("timeout_ms") or 0) < 0:
        scope.report.add(f"{base}.timeout_ms", "must be greater than or equal to 0")


_ACTOR_RULES: dict[str, Callable[[dict[str, Any], str, _Scope], None]] = {
    "scripted": _check_scripted,
    "llm": _check_llm,
    "human": _check_human,
}


def _check_calibration(calibration: dict[str, Any], prefix: str, report: Report) -> None:
    if calibration.get("enabled") and not 0 < (calibration.get("sample_rate") or 0) <= 1:
        report.add(f"{prefix}.calibration.sample_rate", "must be greater than 0 and at most 1 when calibration is enabled")

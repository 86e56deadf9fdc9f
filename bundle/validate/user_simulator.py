"""Per-case ``user_simulator`` (spec §2.14, §3.12)."""

from __future__ import annotations

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
    ids: set[str] = set()
    input_keys = case_input_keys(case)
    context = None
    for p, phase in enumerate(phases):
        base = f"{prefix}.phases[{p}]"
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
        trigger = (phase.get("trigger") or "").strip()
        if trigger and trigger not in TRIGGERS:
            report.add(f"{base}.trigger", "must be a supported trigger expression")
        elif p == 0 and trigger not in ("", "always"):
            report.add(f"{base}.trigger", 'first phase trigger must be empty or "always"')
        elif p > 0 and trigger in ("", "always"):
            report.add(f"{base}.trigger", 'only the first phase may use "always"')
        if actor == "scripted":
            turns = phase.get("turns") or []
            if not turns:
                report.add(f"{base}.turns", "must contain at least one turn for scripted actor")
            for t, turn in enumerate(turns):
                tbase = f"{base}.turns[{t}]"
                message = turn.get("message") or ""
                if not message.strip():
                    report.add(f"{tbase}.message", "is required for scripted turns")
                validate_expectations(turn.get("expects"), f"{tbase}.expects", input_keys, version_keys, report)
                if message.strip():
                    if context is None:
                        context = case_context(case)
                    problem = first_template_problem(message, context)
                    if problem:
                        report.add(f"{tbase}.message", problem)
        elif actor == "llm":
            if not (phase.get("persona") or "").strip():
                report.add(f"{base}.persona", "is required for llm actor")
            if (phase.get("max_turns") or 0) < 0:
                report.add(f"{base}.max_turns", "must be greater than or equal to 0")
            for u, condition in enumerate(phase.get("until") or ()):
                if not (condition or "").strip():
                    report.add(f"{base}.until[{u}]", "must be a non-empty condition expression")
        elif actor == "human":
            if (phase.get("timeout_ms") or 0) < 0:
                report.add(f"{base}.timeout_ms", "must be greater than or equal to 0")
        if actor and actor != "llm" and (phase.get("model") or "").strip():
            report.add(f"{base}.model", "is only valid on phases with actor: llm")
    calibration = sim.get("calibration") or {}
    if calibration.get("enabled"):
        rate = calibration.get("sample_rate") or 0
        if not 0 < rate <= 1:
            report.add(
                f"{prefix}.calibration.sample_rate",
                "must be greater than 0 and at most 1 when calibration is enabled",
            )
    arena = (sim.get("post_run") or {}).get("arena") or {}
    if arena.get("enabled") and (arena.get("comparison") or "") not in ("", "pairwise"):
        report.add(f"{prefix}.post_run.arena.comparison", 'must be one of "pairwise"')

"""User-simulator helpers for ``multi_turn`` (pack-format §2.14, §3.12; runtime §3.5).

Only ``scripted`` actors run today; :func:`unsupported_simulator_actors` lets the Django side
refuse a run up front instead of failing every case.
"""

from __future__ import annotations

import re

from engine.types import JSON

SUPPORTED_ACTORS = frozenset({"scripted"})
DEFAULT_MAX_TURNS = 50

# Triggers the engine can decide by itself. `manual`, `never` and triggers that need scoring
# results (`on_validator_fail`, `on_judge_below`) or llm/loop detection (`on_agent_loop`,
# `on_max_llm_turns`) never fire here.
TRIGGER_ALWAYS = "always"
TRIGGER_ON_MISMATCH = "on_assistant_mismatch"


def phases_of(case: dict[str, JSON]) -> list[dict[str, JSON]]:
    simulator = case.get("user_simulator")
    if not isinstance(simulator, dict):
        return []
    return [phase for phase in simulator.get("phases") or [] if isinstance(phase, dict)]


def unsupported_simulator_actors(case: dict[str, JSON]) -> list[str]:
    """Sorted distinct actors of the case's phases that the engine cannot drive (``llm``, ``human``)."""
    actors = {str(phase.get("actor") or "").strip() for phase in phases_of(case)}
    return sorted(actor for actor in actors if actor and actor not in SUPPORTED_ACTORS)


def max_turns_of(case: dict[str, JSON]) -> int:
    simulator = case.get("user_simulator") or {}
    value = simulator.get("max_turns") if isinstance(simulator, dict) else None
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        return DEFAULT_MAX_TURNS
    return value


def phase_should_run(phase: dict[str, JSON], index: int, *, pending_mismatch: bool) -> bool:
    trigger = str(phase.get("trigger") or "").strip() or TRIGGER_ALWAYS
    if index == 0 or trigger == TRIGGER_ALWAYS:
        return True
    return trigger == TRIGGER_ON_MISMATCH and pending_mismatch


def _expected_value(expect: dict[str, JSON], inputs: dict[str, JSON]) -> tuple[bool, JSON]:
    if "value" in expect and expect["value"] is not None:
        return True, expect["value"]
    source = str(expect.get("source") or "")
    if source.startswith("input:"):
        key = source[len("input:") :].strip()
        if key in inputs:
            return True, inputs[key]
    return False, None


def check_expects(answer: str, expects: list[JSON], inputs: dict[str, JSON]) -> list[dict[str, JSON]]:
    """Evaluate a scripted turn's ``expects`` against the assistant's answer.

    Kinds: ``contains`` / ``not_contains`` (case-insensitive), ``equals`` / ``exact_match``
    (trimmed), ``regex`` / ``regex_match``. Other kinds, and expectations whose value cannot be
    resolved (artifacts), are reported with ``passed: None`` and never count as a mismatch.
    """
    results: list[dict[str, JSON]] = []
    for expect in expects or []:
        if not isinstance(expect, dict):
            continue
        kind = str(expect.get("kind") or "").strip().lower()
        found, value = _expected_value(expect, inputs)
        passed: bool | None = None
        if found:
            text = value if isinstance(value, str) else str(value)
            if kind == "contains":
                passed = text.lower() in answer.lower()
            elif kind == "not_contains":
                passed = text.lower() not in answer.lower()
            elif kind in ("equals", "exact_match", "exact"):
                passed = answer.strip() == text.strip()
            elif kind in ("regex", "regex_match"):
                try:
                    passed = re.search(text, answer) is not None
                except re.error:
                    passed = None
        results.append({"key": str(expect.get("key") or ""), "kind": kind, "passed": passed})
    return results

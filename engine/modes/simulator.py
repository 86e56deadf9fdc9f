"""User-simulator helpers for ``multi_turn`` (pack-format §2.14, §3.12; runtime §3.5).

Which phases run, which the engine cannot run, ``until`` conditions, turn ``expects`` and the
prompt an ``llm`` actor's deployment is given. :func:`unsupported_simulator_phases` and
:func:`llm_phases` let the Django side refuse a run, or ask for a simulator deployment, before
any case starts.

Triggers the engine decides by itself: the first phase always runs; a later phase runs on
``always``, on ``on_assistant_mismatch`` while a mismatch is *open* (the latest turn whose
``expects`` could be checked failed one; turns without checkable ``expects`` — a pushback line,
an llm turn — leave it as it was), and on ``on_max_llm_turns`` when the previous ``llm`` phase
used all its turns without meeting its ``until``. ``manual``, ``never`` and the triggers that
need scoring results (``on_validator_fail``, ``on_judge_below``) or loop detection
(``on_agent_loop``) never fire in an automated run, so a ``human`` phase behind them is skipped
rather than refused.
"""

from __future__ import annotations

import dataclasses
import json
import re

from engine.types import JSON, Message

SCRIPTED = "scripted"
LLM = "llm"
HUMAN = "human"
SUPPORTED_ACTORS = frozenset({SCRIPTED, LLM})
DEFAULT_MAX_TURNS = 50

TRIGGER_ALWAYS = "always"
TRIGGER_ON_MISMATCH = "on_assistant_mismatch"
TRIGGER_ON_MAX_LLM_TURNS = "on_max_llm_turns"
# The triggers that can fire in an unattended run (see the module docstring).
FIRING_TRIGGERS = frozenset({TRIGGER_ALWAYS, TRIGGER_ON_MISMATCH, TRIGGER_ON_MAX_LLM_TURNS})

SIMULATOR_PURPOSE = "user_simulator"
SIMULATOR_SYSTEM = (
    "You are simulating the user in a multi-turn evaluation of an AI assistant. Stay in the persona "
    "below and react to what the assistant last said. Reply with the user's next message only: no "
    "role prefix, no quotes, no explanation."
)


def phases_of(case: dict[str, JSON]) -> list[dict[str, JSON]]:
    simulator = case.get("user_simulator")
    if not isinstance(simulator, dict):
        return []
    phases = simulator.get("phases")
    return [phase for phase in phases if isinstance(phase, dict)] if isinstance(phases, list) else []


def actor_of(phase: dict[str, JSON]) -> str:
    return str(phase.get("actor") or "").strip()


def trigger_of(phase: dict[str, JSON]) -> str:
    return str(phase.get("trigger") or "").strip() or TRIGGER_ALWAYS


def phase_can_fire(phase: dict[str, JSON], index: int) -> bool:
    """Whether the phase can run in an unattended run (the first phase always does)."""
    return index == 0 or trigger_of(phase) in FIRING_TRIGGERS


@dataclasses.dataclass(frozen=True, slots=True)
class UnsupportedPhase:
    phase_id: str
    actor: str
    trigger: str


def unsupported_simulator_phases(case: dict[str, JSON]) -> list[UnsupportedPhase]:
    """Phases the engine cannot drive (``human``, or an unknown actor) whose trigger can fire."""
    return [
        UnsupportedPhase(str(phase.get("id") or f"#{index + 1}"), actor_of(phase), trigger_of(phase))
        for index, phase in enumerate(phases_of(case))
        if actor_of(phase) and actor_of(phase) not in SUPPORTED_ACTORS and phase_can_fire(phase, index)
    ]


def unsupported_simulator_actors(case: dict[str, JSON]) -> list[str]:
    """Sorted distinct actors of :func:`unsupported_simulator_phases`."""
    return sorted({phase.actor for phase in unsupported_simulator_phases(case)})


def llm_phases(case: dict[str, JSON]) -> list[dict[str, JSON]]:
    """The ``llm`` phases that can fire: a case with any needs a simulator deployment."""
    return [phase for index, phase in enumerate(phases_of(case)) if actor_of(phase) == LLM and phase_can_fire(phase, index)]


def max_turns_of(case: dict[str, JSON]) -> int:
    simulator = case.get("user_simulator") or {}
    value = simulator.get("max_turns") if isinstance(simulator, dict) else None
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        return DEFAULT_MAX_TURNS
    return value


def phase_max_turns(phase: dict[str, JSON], conversation_max: int) -> int:
    value = phase.get("max_turns")
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        return conversation_max
    return value


@dataclasses.dataclass(slots=True)
class ConversationState:
    """What the triggers read: an open mismatch, and whether the last llm phase ran out of turns."""

    open_mismatch: bool = False
    llm_turns_exhausted: bool = False

    def record_checks(self, checks: list[dict[str, JSON]]) -> bool:
        """Apply a turn's expectation results; returns whether the turn mismatched."""
        decided = [check["passed"] for check in checks if isinstance(check.get("passed"), bool)]
        mismatch = False in decided
        if decided:
            self.open_mismatch = mismatch
        return mismatch


def phase_should_run(phase: dict[str, JSON], index: int, state: ConversationState) -> bool:
    trigger = trigger_of(phase)
    if index == 0 or trigger == TRIGGER_ALWAYS:
        return True
    if trigger == TRIGGER_ON_MISMATCH:
        return state.open_mismatch
    if trigger == TRIGGER_ON_MAX_LLM_TURNS:
        return state.llm_turns_exhausted
    return False


def until_met(conditions: JSON, *, assistant_text: str, user_message: str, phase_turns: int, phase_max: int) -> bool:
    """``until`` conditions of an llm phase, all of which must hold (an empty list never does).

    ``assistant_emitted:<text>`` — the assistant's latest reply contains it (case-insensitive);
    ``user_token:<text>`` — the latest simulated user message contains it; ``max_turns`` — the
    phase used its turns. Any other condition is never met.
    """
    items = [str(item).strip() for item in conditions or [] if str(item).strip()] if isinstance(conditions, list) else []
    if not items:
        return False
    for condition in items:
        if condition == "max_turns":
            met = phase_turns >= phase_max
        elif condition.startswith("assistant_emitted:"):
            token = condition[len("assistant_emitted:") :].strip().lower()
            met = bool(token) and token in assistant_text.lower()
        elif condition.startswith("user_token:"):
            token = condition[len("user_token:") :].strip().lower()
            met = bool(token) and token in user_message.lower()
        else:
            met = False
        if not met:
            return False
    return True


def simulator_messages(persona: str, transcript: list[dict[str, JSON]], case_context: dict[str, JSON]) -> list[Message]:
    """The request an ``llm`` actor's deployment answers with the user's next message."""
    lines = []
    for turn in transcript:
        lines.append(f"user: {turn.get('user_message') or ''}")
        lines.append(f"assistant: {turn.get('assistant_message') or ''}")
    parts = [
        f"Persona:\n{persona.strip()}",
        "Conversation so far:\n" + ("\n".join(lines) if lines else "(no turns yet)"),
    ]
    if case_context:
        parts.append("Case context JSON:\n" + json.dumps(case_context, sort_keys=True, default=str))
    parts.append("Write the user's next message.")
    return [Message(role="system", content=SIMULATOR_SYSTEM), Message(role="user", content="\n\n".join(parts))]


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

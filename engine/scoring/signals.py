"""Behavioural signals over the tool trace (runtime.md §5.6 ``behavioral``)."""

from __future__ import annotations

from engine.scoring.evidence import Extracted

SIGNAL_KEYS = ("recovery_behavior", "exploration_efficiency", "error_cascade", "scope_adherence")


def recovery(ex: Extracted) -> float:
    """Share of failed calls after which the next call was different (name or arguments).

    A failure that is the last call has no "next call" and is not counted as an attempt.
    Multi-turn runs without tool failures use user-simulator mismatches instead: after an
    assistant reply that failed its turn's ``expects``, the next reply counts as adaptive when it
    differs from the one that missed (a mismatch in the last turn has no next reply).
    """
    trace = ex.tool_trace
    attempts = adaptive = 0
    for current, following in zip(trace, trace[1:]):
        if current.failed:
            attempts += 1
            if (following.tool_name, following.arguments_key) != (current.tool_name, current.arguments_key):
                adaptive += 1
    if attempts == 0 and ex.turns:
        for index, turn in enumerate(ex.turns):
            if turn.mismatch and turn.role == "assistant":
                after = [t.content for t in ex.turns[index + 1 :] if t.role == "assistant"]
                if after:
                    attempts += 1
                    adaptive += int(after[0].strip() != turn.content.strip())
    return 1.0 if attempts == 0 else adaptive / attempts


def exploration_efficiency(ex: Extracted) -> float:
    if not ex.tool_trace:
        return 1.0
    seen: set[tuple[str, str]] = set()
    duplicates = 0
    for entry in ex.tool_trace:
        identity = (entry.tool_name, entry.arguments_key)
        duplicates += identity in seen
        seen.add(identity)
    return 1.0 - duplicates / len(ex.tool_trace)


def error_cascade(ex: Extracted) -> float:
    longest = streak = 0
    for entry in ex.tool_trace:
        streak = streak + 1 if entry.failed else 0
        longest = max(longest, streak)
    return 1.0 if longest == 0 else 1.0 / longest


def scope_adherence(ex: Extracted) -> float:
    if not ex.tool_trace:
        return 1.0
    denied = sum(1 for entry in ex.tool_trace if entry.failure_origin == "policy")
    return 1.0 - denied / len(ex.tool_trace)


SIGNALS = {
    "recovery_behavior": recovery,
    "exploration_efficiency": exploration_efficiency,
    "error_cascade": error_cascade,
    "scope_adherence": scope_adherence,
}

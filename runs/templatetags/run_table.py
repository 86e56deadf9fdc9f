"""``{% load run_table %}``: the runs list's numbers in words."""

from __future__ import annotations

from typing import Any

from django import template

from infrastructure.models import ExecutionTarget
from runs.run_table import duration_text

register = template.Library()


@register.filter
def run_duration(run: Any) -> str:
    """How long a run took (or has been running): ``run_list_table``'s ``duration``, in words."""
    if getattr(run, "started_at", None) is None:
        return ""
    return duration_text(getattr(run, "duration", None))


@register.filter
def execution_mode_label(mode: str) -> str:
    """``prompt_eval`` -> "Prompt eval": the runtime target's label without its explanation in brackets."""
    try:
        return str(ExecutionTarget(mode).label).split(" (")[0]
    except ValueError:
        return mode.replace("_", " ").capitalize()


STOP_REASONS = {
    "completed": "Finished",
    "cancelled": "Cancelled",
    "error": "Error",
    "timeout": "Timed out",
    "deadline_exceeded": "Run deadline passed",
    "step_limit": "Step limit reached",
    "tool_limit": "Tool-call limit reached",
    "token_limit": "Token limit reached",
    "max_turns": "Turn limit reached",
    "quota_exceeded": "Event storage quota exceeded",
    "provider_error": "Provider error",
    "sandbox_error": "Sandbox error",
    "simulator_error": "User simulator error",
}


@register.filter
def stop_reason_label(reason: str) -> str:
    """A case run's ``stop_reason`` code in words (unknown codes lose their underscores)."""
    if not reason:
        return ""
    return STOP_REASONS.get(reason, reason.replace("_", " ").capitalize())

"""``{% load run_table %}``: the runs list's numbers in words."""

from __future__ import annotations

from typing import Any

from django import template

from runs.run_table import duration_text

register = template.Library()


@register.filter
def run_duration(run: Any) -> str:
    """How long a run took (or has been running): ``run_list_table``'s ``duration``, in words."""
    if getattr(run, "started_at", None) is None:
        return ""
    return duration_text(getattr(run, "duration", None))

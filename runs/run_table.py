"""The runs list's columns: which sort, how each header links, and durations in words."""

from __future__ import annotations

import dataclasses
from datetime import timedelta
from urllib.parse import urlencode

# (label, sort key or "" when the column does not sort, numeric?)
COLUMNS: list[tuple[str, str, bool]] = [
    ("Run", "name", False),
    ("Status", "status", False),
    ("Winner", "winner", False),
    ("Best score", "best_score", True),
    ("Pass rate", "pass_rate", True),
    ("Duration", "duration", True),
    ("Created", "created", False),
]
# Numbers read best from the top first; names from A.
DESCENDING_FIRST = {"best_score", "pass_rate", "duration", "created"}


@dataclasses.dataclass(frozen=True)
class Column:
    label: str
    key: str
    numeric: bool
    href: str  # "" when the column does not sort
    aria_sort: str  # ascending | descending | "" (not the sorted column)


def columns(*, sort: str, filters: dict[str, str]) -> list[Column]:
    """Header links: a click sorts by the column, a second click reverses it; filters are kept."""
    current = sort.lstrip("-")
    descending = sort.startswith("-")
    kept = {k: v for k, v in filters.items() if v}
    result = []
    for label, key, numeric in COLUMNS:
        if not key:
            result.append(Column(label, key, numeric, "", ""))
            continue
        if key == current:
            target = key if descending else f"-{key}"
            aria = "descending" if descending else "ascending"
        else:
            target = f"-{key}" if key in DESCENDING_FIRST else key
            aria = ""
        result.append(Column(label, key, numeric, "?" + urlencode({**kept, "sort": target}), aria))
    return result


def duration_text(value: timedelta | None) -> str:
    """``1.2s``, ``48s``, ``3m 05s``, ``2h 04m``; "" for no value."""
    if value is None:
        return ""
    seconds = max(0.0, value.total_seconds())
    if seconds < 10:
        return f"{seconds:.1f}s"
    whole = int(seconds)
    if whole < 3600:
        return f"{whole // 60}m {whole % 60:02d}s" if whole >= 60 else f"{whole}s"
    return f"{whole // 3600}h {whole % 3600 // 60:02d}m"

"""Repeated trials at run creation: ``repeats`` and ``max_repeats`` checked and resolved (docs/runs.md, "Trials")."""

from __future__ import annotations

import dataclasses
from typing import Any

from runs.models import DEFAULT_AUTO_FIRST_ROUND, MAX_REPEATS, RepeatsMode
from runs.services.resolve import RunCreateError

AUTO = "auto"


@dataclasses.dataclass(frozen=True, slots=True)
class Repeats:
    """How a run repeats its cases: ``first_round`` trials of every case now; in ``auto`` mode, rounds
    of one more trial each up to ``max_repeats``."""

    mode: str
    first_round: int
    max_repeats: int | None

    @property
    def is_adaptive(self) -> bool:
        return self.mode == RepeatsMode.AUTO


def _count(value: Any, field: str, low: int) -> int:
    """``value`` as an integer from ``low`` to MAX_REPEATS (an int, or a string of digits from a form or YAML)."""
    number: int | None = None
    if isinstance(value, int) and not isinstance(value, bool):
        number = value
    elif isinstance(value, str) and value.strip().isdigit():
        number = int(value.strip())
    if number is None or not low <= number <= MAX_REPEATS:
        got = f" (got {value!r})" if not isinstance(value, (dict, list)) else ""
        more = ', or "auto"' if field == "repeats" else ""
        raise RunCreateError(f"{field} must be an integer from {low} to {MAX_REPEATS}{more}{got}.", field=field, code="invalid_repeats")
    return number


def repeats_resolve(*, repeats: Any = 1, max_repeats: Any = None, lanes: int = 1) -> Repeats:
    """``repeats`` (1–50 or ``"auto"``, default 1) and ``max_repeats`` (with ``"auto"`` only, 2–50) as a
    :class:`Repeats`, or a RunCreateError naming the field and what to do."""
    if repeats is None or repeats == "":
        repeats = 1
    if isinstance(repeats, str) and repeats.strip().lower() == AUTO:
        if max_repeats is None or max_repeats == "":
            raise RunCreateError(
                f'repeats "auto" needs max_repeats: the most trials of one case the rounds may reach (2 to {MAX_REPEATS}).',
                field="max_repeats",
                code="invalid_repeats",
            )
        most = _count(max_repeats, "max_repeats", 2)
        if lanes < 2:
            raise RunCreateError(
                'repeats "auto" adds trials while the comparison of the lanes is undecided, so it needs at least two '
                "deployments (the first is the baseline); with one deployment choose a fixed number of repeats.",
                field="repeats",
                code="invalid_repeats",
            )
        return Repeats(RepeatsMode.AUTO, min(DEFAULT_AUTO_FIRST_ROUND, most), most)
    count = _count(repeats, "repeats", 1)
    if max_repeats not in (None, ""):
        raise RunCreateError(
            'max_repeats goes with repeats "auto" only: leave it out, or set repeats to "auto".',
            field="max_repeats",
            code="invalid_repeats",
        )
    return Repeats(RepeatsMode.FIXED, count, None)

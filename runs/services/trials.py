"""Repeated trials at run creation: ``repeats`` and ``max_repeats`` checked and resolved (docs/runs.md, "Trials")."""

from __future__ import annotations

import dataclasses
from typing import Any

from engine.scoring.stats import DEFAULT_CONFIDENCE, DEFAULT_MAX_REGRESSION, check_confidence, check_max_regression
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
    max_regression: float = DEFAULT_MAX_REGRESSION
    confidence: float = DEFAULT_CONFIDENCE

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


def _round_policy(max_regression: Any, confidence: Any) -> tuple[float, float]:
    """The rounds' gate tolerance and confidence (defaults 0.05 and 0.95), checked like a gate policy's."""
    out: list[float] = []
    for field, value, default, check in (
        ("max_regression", max_regression, DEFAULT_MAX_REGRESSION, check_max_regression),
        ("confidence", confidence, DEFAULT_CONFIDENCE, check_confidence),
    ):
        if value is None or value == "":
            out.append(default)
            continue
        if isinstance(value, str):
            try:
                value = float(value.strip())
            except ValueError:
                pass
        try:
            out.append(check(value))
        except ValueError as exc:
            raise RunCreateError(f"{exc} (got {value!r}).", field=field, code="invalid_round_policy") from None
    if out[0] <= 0.0:
        raise RunCreateError(
            "max_regression must be greater than 0 for adaptive trials: the rounds' sequential test resolves drops of that "
            "size (0.05 by default); with no tolerated drop at all, choose a fixed number of repeats.",
            field="max_regression",
            code="invalid_round_policy",
        )
    return out[0], out[1]


def repeats_resolve(
    *, repeats: Any = 1, max_repeats: Any = None, lanes: int = 1, max_regression: Any = None, confidence: Any = None
) -> Repeats:
    """``repeats`` (1–50 or ``"auto"``, default 1) and ``max_repeats`` (with ``"auto"`` only, 2–50) as a
    :class:`Repeats`, or a RunCreateError naming the field and what to do. ``max_regression`` and
    ``confidence`` (with ``"auto"`` only) are the rounds' gate: 0 < max_regression < 1 (0.05 by
    default), 0.5 ≤ confidence < 1 (0.95 by default)."""
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
        m, c = _round_policy(max_regression, confidence)
        return Repeats(RepeatsMode.AUTO, min(DEFAULT_AUTO_FIRST_ROUND, most), most, m, c)
    count = _count(repeats, "repeats", 1)
    if max_repeats not in (None, ""):
        raise RunCreateError(
            'max_repeats goes with repeats "auto" only: leave it out, or set repeats to "auto".',
            field="max_repeats",
            code="invalid_repeats",
        )
    for field, value in (("max_regression", max_regression), ("confidence", confidence)):
        if value not in (None, ""):
            raise RunCreateError(
                f'{field} sets the gate of adaptive rounds and goes with repeats "auto" only: leave it out, or set repeats to '
                '"auto" (a fixed run is gated by the release gate\'s policy).',
                field=field,
                code="invalid_repeats",
            )
    return Repeats(RepeatsMode.FIXED, count, None)

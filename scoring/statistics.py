"""A lane's trial statistics as the scorecards show them: read from the stored scorecard, in words.

``scoring.services.scorecards.lane_score`` stores them in the lane scorecard document
(``statistics``, engine/scoring/stats.py ``lane_statistics``) when it scores the lane, so a page or
an API read costs no query per trial. A scorecard stored before that has none: its lanes' trials
are read here in one query for all of them and the statistics computed on the fly.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypedDict, cast

from engine.scoring.documents import LaneScorecardDocument
from engine.scoring.stats import LaneStatistics, lane_statistics
from scoring.selectors import lane_trials


class ErrorBar(TypedDict):
    """An interval as a chart draws it: the value and its bounds, each from 0 to 1."""

    value: float
    low: float
    high: float


def statistics_by_lane(documents: Mapping[int, LaneScorecardDocument | Mapping[str, object]]) -> dict[int, LaneStatistics]:
    """``{lane_id: statistics}`` for lanes with a scorecard: stored ones as they are, the others computed
    from the lanes' case runs (one query for all of them)."""
    out: dict[int, LaneStatistics] = {}
    missing = []
    for lane_id, document in documents.items():
        stored = document.get("statistics") if isinstance(document, dict) else None
        if isinstance(stored, dict) and "pass_rate_ci" in stored:
            out[lane_id] = cast(LaneStatistics, stored)
        else:
            missing.append(lane_id)
    if missing:
        for lane_id, trials in lane_trials(lane_ids=missing).items():
            out[lane_id] = lane_statistics(trials)
    return out


def _percent(value: float) -> str:
    return f"{value * 100:.0f} %"


def _trials(count: int) -> str:
    return f"{count} trial{'s' if count != 1 else ''}"


def interval_note(statistics: LaneStatistics | None, metric: str = "pass_rate") -> str:
    """``48–74 %, 95 % CI, 10 trials`` (the pass rate) or ``0.65–0.77, 95 % CI, 10 trials`` (the
    score); ``1 trial: no uncertainty estimate`` without an interval; "" without a value."""
    bar = error_bar(statistics, metric)
    if not statistics or (statistics.get("pass_rate") if metric == "pass_rate" else statistics.get("score")) is None:
        return ""
    trials = _trials(statistics.get("trials") or 0)
    if bar is None:
        return f"{trials}: no uncertainty estimate"
    confidence = f"{statistics.get('confidence', 0.95) * 100:.0f} % CI"
    if metric == "pass_rate":
        return f"{bar['low'] * 100:.0f}–{bar['high'] * 100:.0f} %, {confidence}, {trials}"
    return f"{bar['low']:.2f}–{bar['high']:.2f}, {confidence}, {trials}"


def pass_rate_text(statistics: LaneStatistics | None) -> str:
    """``62 % (48–74 %, 95 % CI, 10 trials)``; with one trial per case, ``62 % (1 trial: no uncertainty estimate)``."""
    rate = statistics.get("pass_rate") if statistics else None
    return "—" if rate is None else f"{_percent(rate)} ({interval_note(statistics)})"


def score_text(statistics: LaneStatistics | None) -> str:
    """``0.71 (0.65–0.77, 95 % CI, 10 trials)``; with one trial per case, ``0.71 (1 trial: no uncertainty estimate)``."""
    score = statistics.get("score") if statistics else None
    return "—" if score is None else f"{score:.2f} ({interval_note(statistics, 'score')})"


def error_bar(statistics: LaneStatistics | None, metric: str) -> ErrorBar | None:
    """The pass rate's (``pass_rate``) or the score's (``score``) interval, or None without one."""
    if not statistics:
        return None
    value = statistics.get("pass_rate") if metric == "pass_rate" else statistics.get("score")
    interval = statistics.get("pass_rate_ci") if metric == "pass_rate" else statistics.get("score_ci")
    if value is None or not interval:
        return None
    return {"value": float(value), "low": float(interval[0]), "high": float(interval[1])}


class KRow(TypedDict):
    k: int
    pass_at_k: float
    pass_hat_k: float | None


def k_rows(statistics: LaneStatistics | None) -> list[KRow]:
    """pass@k and pass^k for k = 1 … trials, as table rows."""
    if not statistics:
        return []
    at, hat = statistics.get("pass_at_k") or {}, statistics.get("pass_hat_k") or {}
    return [{"k": int(k), "pass_at_k": at[k], "pass_hat_k": hat.get(k)} for k in sorted(at, key=int)]

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


def pass_rate_text(statistics: LaneStatistics | None) -> str:
    """``62 % (48–74 %, 95 % CI, 10 trials)``; with one trial per case, ``62 % (1 trial: no uncertainty estimate)``."""
    if not statistics or statistics.get("pass_rate") is None:
        return "—"
    rate = cast(float, statistics["pass_rate"])
    interval = statistics.get("pass_rate_ci")
    if not interval:
        return f"{_percent(rate)} ({_trials(statistics.get('trials') or 0)}: no uncertainty estimate)"
    low, high = interval
    confidence = f"{statistics.get('confidence', 0.95) * 100:.0f} % CI"
    return f"{_percent(rate)} ({low * 100:.0f}–{high * 100:.0f} %, {confidence}, {_trials(statistics['trials'])})"


def score_text(statistics: LaneStatistics | None) -> str:
    """``0.71 (0.65–0.77, 95 % CI, 10 trials)``; with one trial per case, ``0.71 (1 trial: no uncertainty estimate)``."""
    if not statistics or statistics.get("score") is None:
        return "—"
    score = cast(float, statistics["score"])
    interval = statistics.get("score_ci")
    if not interval:
        return f"{score:.2f} ({_trials(statistics.get('trials') or 0)}: no uncertainty estimate)"
    low, high = interval
    confidence = f"{statistics.get('confidence', 0.95) * 100:.0f} % CI"
    return f"{score:.2f} ({low:.2f}–{high:.2f}, {confidence}, {_trials(statistics['trials'])})"


def error_bar(statistics: LaneStatistics | None, metric: str) -> ErrorBar | None:
    """The pass rate's (``pass_rate``) or the score's (``score``) interval, or None without one."""
    if not statistics:
        return None
    value = statistics.get("pass_rate") if metric == "pass_rate" else statistics.get("score")
    interval = statistics.get("pass_rate_ci") if metric == "pass_rate" else statistics.get("score_ci")
    if value is None or not interval:
        return None
    return {"value": float(value), "low": float(interval[0]), "high": float(interval[1])}

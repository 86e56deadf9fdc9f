"""A pack's results across its runs: pass rate and overall score per agent, drawn as inline SVG.

The geometry is computed here (plain numbers for the template), so the chart needs no script,
no CDN and no style= attribute: colours come from classes in app.css (``s-0`` … ``s-7``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import TypedDict, cast

from engine.scoring.stats import LaneStatistics
from packs.models import Pack
from runs.models import Run, RunStatus
from scoring.models import LaneScorecard
from scoring.statistics import error_bar, interval_note
from workspaces.models import Workspace

MAX_RUNS = 40
SERIES_CLASSES = 8
# The SVG's coordinate system (it scales to the card's width).
WIDTH, HEIGHT = 480, 240
LEFT, RIGHT, TOP, BOTTOM = 44, 20, 12, 34
GRID = (0.0, 0.25, 0.5, 0.75, 1.0)
MAX_X_LABELS = 8
# Agents with the same value in the same run would draw one dot (and line) over another: each
# such dot moves sideways by this many units, centred on the run (issue 25, "overlapping series").
DODGE = 11  # a dot is 10 units wide (r="5"): side by side, not overlapping


@dataclasses.dataclass(frozen=True)
class Point:
    x: float
    y: float
    value: float
    title: str
    low_y: float | None = None  # the interval's ends (the error bar), when the lane had trials
    high_y: float | None = None

    @property
    def caps(self) -> tuple[float, float]:
        """The error bar's caps, from x to x."""
        return (self.x - 4, self.x + 4)


@dataclasses.dataclass
class Series:
    name: str
    css: str
    points: list[Point]

    @property
    def path(self) -> str:
        return " ".join(f"{p.x:.1f},{p.y:.1f}" for p in self.points)


@dataclasses.dataclass(frozen=True)
class Tick:
    x: float
    label: str
    href: str


@dataclasses.dataclass
class Chart:
    key: str
    title: str
    series: list[Series]
    grid: list[tuple[float, str]]  # (y, label)
    ticks: list[Tick]
    width: int = WIDTH
    height: int = HEIGHT
    left: int = LEFT
    right_edge: int = WIDTH - RIGHT
    baseline_y: float = HEIGHT - BOTTOM


class TrendRow(TypedDict):
    """One agent in one run: the numbers behind the charts, for the table."""

    run: Run
    agent: str
    pass_rate: float | None
    overall_score: float | None
    pass_rate_interval: str  # "48–74 %, 95 % CI, 10 trials" (scoring/statistics.py)


@dataclasses.dataclass
class PackTrends:
    runs: list[Run]
    agents: list[str]
    charts: list[Chart]
    rows: list[TrendRow]


def _x(index: int, count: int) -> float:
    span = WIDTH - LEFT - RIGHT
    return LEFT + span / 2 if count == 1 else LEFT + span * index / (count - 1)


def _y(value: float) -> float:
    return TOP + (HEIGHT - TOP - BOTTOM) * (1 - max(0.0, min(1.0, value)))


def _dodge(series: list[Series]) -> None:
    """Spread the dots that land on one spot so every agent stays visible; lines follow their dots."""
    spots: dict[tuple[float, float], list[tuple[int, int]]] = {}
    for s_index, one in enumerate(series):
        for p_index, point in enumerate(one.points):
            spots.setdefault((round(point.x, 1), round(point.y, 1)), []).append((s_index, p_index))
    for shared in spots.values():
        if len(shared) < 2:
            continue
        for rank, (s_index, p_index) in enumerate(shared):
            point = series[s_index].points[p_index]
            offset = (rank - (len(shared) - 1) / 2) * DODGE
            series[s_index].points[p_index] = dataclasses.replace(point, x=point.x + offset)


def _percent(value: float) -> str:
    return f"{value * 100:.0f}%"


def _two_places(value: float) -> str:
    return f"{value:.2f}"


def _statistics(card: LaneScorecard) -> LaneStatistics | None:
    """The trial statistics stored with the scorecard; a scorecard scored before they were stored had
    one trial per case, so it has no interval to draw either way."""
    stored = card.document.get("statistics") if isinstance(card.document, dict) else None
    return cast(LaneStatistics, stored) if isinstance(stored, dict) else None


def pack_trends(*, workspace: Workspace, pack: Pack, workspace_slug: str) -> PackTrends:
    """The last ``MAX_RUNS`` scored runs of any version of ``pack``, oldest first (two queries)."""
    runs = list(
        Run.objects.filter(workspace=workspace, pack_version__pack=pack, status=RunStatus.COMPLETED)
        .select_related("pack_version")
        .order_by("-created_at", "-id")[:MAX_RUNS]
    )[::-1]
    scorecards = list(LaneScorecard.objects.filter(lane__run__in=[r.pk for r in runs]).select_related("lane").order_by("lane__lane_index"))
    index = {run.pk: i for i, run in enumerate(runs)}
    agents: list[str] = []
    values: dict[tuple[str, int], LaneScorecard] = {}
    for card in scorecards:
        name = card.lane.label
        if name not in agents:
            agents.append(name)
        values[(name, card.lane.run_id)] = card
    rows: list[TrendRow] = [
        {
            "run": run,
            "agent": agent,
            "pass_rate": values[(agent, run.pk)].pass_rate,
            "overall_score": values[(agent, run.pk)].overall_score,
            "pass_rate_interval": interval_note(_statistics(values[(agent, run.pk)])),
        }
        for run in runs
        for agent in agents
        if (agent, run.pk) in values
    ]
    charts = []
    formats: tuple[tuple[str, str, str, Callable[[float], str]], ...] = (
        ("pass_rate", "Pass rate", "pass_rate", _percent),
        ("overall_score", "Overall score", "overall_score", _two_places),
    )
    for key, title, attr, fmt in formats:
        series = []
        for n, agent in enumerate(agents):
            points = []
            for run in runs:
                found = values.get((agent, run.pk))
                value = getattr(found, attr) if found is not None else None
                if found is None or value is None:
                    continue
                statistics = _statistics(found)
                bar = error_bar(statistics, "pass_rate" if key == "pass_rate" else "score")
                note = interval_note(statistics, "pass_rate" if key == "pass_rate" else "score")
                label = f"{agent} — run #{run.pk} (v{run.pack_version.number}): {title.lower()} {fmt(value)}" + (
                    f" ({note})" if note else ""
                )
                low, high = (_y(bar["low"]), _y(bar["high"])) if bar else (None, None)
                points.append(Point(_x(index[run.pk], len(runs)), _y(value), value, label, low, high))
            series.append(Series(agent, f"s-{n % SERIES_CLASSES}", points))
        _dodge(series)
        grid = [(_y(g), fmt(g)) for g in GRID]
        step = max(1, -(-len(runs) // MAX_X_LABELS))
        ticks = [
            Tick(_x(i, len(runs)), f"v{run.pack_version.number} #{run.pk}", f"/w/{workspace_slug}/runs/{run.pk}/")
            for i, run in enumerate(runs)
            if i % step == 0 or i == len(runs) - 1
        ]
        charts.append(Chart(key, title, series, grid, ticks))
    return PackTrends(runs, agents, charts, rows)

"""Race context, the runs side: the peer standings a lane's agent is told between steps.

The engine only calls a function that returns text (``engine/modes/race.py`` decides when); this
module builds that function for a case run whose run has ``race_context`` on. The text comes from
the database at call time, one aggregate query: for every *other* lane, how many of its cases have
finished and how many of those passed (a case counts as passed once it is scored). Lanes are named
by letter (lane index 0 = A) and label, as on the run page.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.db.models import Count, Q

from engine.modes.race import StandingsSource
from runs.models import CASE_TERMINAL, LANE_TERMINAL, CaseRun, Lane, LaneStatus


def lane_letter(lane_index: int) -> str:
    letters = ""
    index = lane_index
    while True:
        letters = chr(ord("A") + index % 26) + letters
        index = index // 26 - 1
        if index < 0:
            return letters


def _lane_line(row: Mapping[str, Any]) -> str:
    name = f"lane {lane_letter(row['lane_index'])} ({row['label']})"
    if row["done"] == 0 and row["status"] not in LANE_TERMINAL:
        return f"{name} has not finished a case yet (0/{row['total']})"
    line = f"{name} has finished {row['done']}/{row['total']} cases, {row['passed']} passed"
    if row["status"] in (LaneStatus.FAILED, LaneStatus.CANCELLED):
        line += f" (lane {row['status']})"
    return line


def standings_text(*, run_id: int, lane_id: int) -> str:
    """How the run's other lanes stand, in one line; "" when the run has no other lane."""
    rows = (
        Lane.objects.filter(run_id=run_id)
        .exclude(pk=lane_id)
        .annotate(
            total=Count("case_runs"),
            done=Count("case_runs", filter=Q(case_runs__status__in=CASE_TERMINAL)),
            passed=Count("case_runs", filter=Q(case_runs__passed=True)),
        )
        .order_by("lane_index")
        .values("lane_index", "label", "status", "total", "done", "passed")
    )
    lines = [_lane_line(row) for row in rows]
    return "; ".join(lines) + "." if lines else ""


def race_standings_source(case_run: CaseRun) -> StandingsSource | None:
    """The engine's standings source for this case run, or None when the run has race context off."""
    if not case_run.run.race_context:
        return None
    run_id, lane_id = case_run.run_id, case_run.lane_id

    def standings() -> str:
        return standings_text(run_id=run_id, lane_id=lane_id)

    return standings

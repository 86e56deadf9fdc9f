"""Reads of scores: the lanes' standings while a run is still being scored."""

from __future__ import annotations

import dataclasses

from django.db.models import Avg, Count, Q

from runs.models import Lane, Run, ScoreStatus


@dataclasses.dataclass(frozen=True)
class LaneStanding:
    """How a lane is doing so far: its scored and passed cases and their mean score."""

    lane: Lane
    total: int
    scored: int
    passed: int
    score_mean: float | None

    @property
    def pass_rate(self) -> float | None:
        """Passed cases among the scored ones, so far."""
        return self.passed / self.scored if self.scored else None


def lane_standings(*, run: Run) -> list[LaneStanding]:
    """The lanes by how they are doing so far (pass rate, then mean score): the live scorecard. One query."""
    scored = Q(case_runs__score_status=ScoreStatus.SCORED)
    lanes = run.lanes.order_by("lane_index").annotate(
        total=Count("case_runs"),
        scored=Count("case_runs", filter=scored),
        passed=Count("case_runs", filter=Q(case_runs__passed=True)),
        score_mean=Avg("case_runs__score", filter=scored),
    )
    standings = [
        LaneStanding(lane=lane, total=lane.total, scored=lane.scored, passed=lane.passed, score_mean=lane.score_mean) for lane in lanes
    ]
    return sorted(standings, key=lambda s: (-(s.pass_rate or 0), -(s.score_mean or 0), s.lane.lane_index))

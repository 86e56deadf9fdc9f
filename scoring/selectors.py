"""Reads of scores: the lanes' standings while a run is still being scored, how observable each lane is."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import TypedDict

from django.db.models import Avg, Count, Q

from engine.scoring.stats import Trial
from engine.scoring.tiers import BLACK_BOX, NATIVE, TIER_LABELS, TIER_NAMES, lane_tier
from infrastructure.models import ExecutionTarget
from runs.models import CaseRun, CaseStatus, Lane, Run, ScoreStatus


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


class EvidenceTier(TypedDict):
    """How observable a lane is (engine/scoring/tiers.py): the tier, its name and its label."""

    tier: str
    name: str
    label: str


def lane_evidence_tiers(lanes: list[Lane]) -> dict[int, EvidenceTier]:
    """``{lane_id: {"tier", "name", "label"}}``: native lanes are ``native``; a hosted lane is as observable
    as its least observed finished case (``black_box`` until one has finished). One query."""
    hosted = [lane.pk for lane in lanes if lane.runtime_profile_snapshot.get("execution_target") == ExecutionTarget.HOSTED_EXTERNAL]
    seen: dict[int, list[str]] = {pk: [] for pk in hosted}
    if hosted:
        rows = CaseRun.objects.filter(lane_id__in=hosted).values_list("lane_id", "verification__evidence_tier")
        for lane_id, tier in rows:
            if isinstance(tier, str):
                seen[lane_id].append(tier)
    tiers = {lane.pk: (lane_tier(seen[lane.pk]) if seen.get(lane.pk) else BLACK_BOX) if lane.pk in seen else NATIVE for lane in lanes}
    return {pk: {"tier": tier, "name": TIER_NAMES[tier], "label": TIER_LABELS[tier]} for pk, tier in tiers.items()}


def lane_trials(*, lane_ids: Sequence[int]) -> dict[int, dict[str, list[Trial]]]:
    """``{lane_id: {case_key: [Trial, …]}}`` in trial order: each case run's verdict and score, or
    ``None`` for both when it was not scored (missing evidence, never a failure); a cancelled trial
    is left out. One query, whatever the number of lanes, cases and trials."""
    out: dict[int, dict[str, list[Trial]]] = {lane_id: {} for lane_id in lane_ids}
    rows = (
        CaseRun.objects.filter(lane_id__in=list(lane_ids))
        .exclude(status=CaseStatus.CANCELLED)
        .order_by("lane_id", "case_key", "trial")
        .values_list("lane_id", "case_key", "score_status", "passed", "score")
    )
    for lane_id, case_key, score_status, passed, score in rows.iterator(chunk_size=2000):
        scored = score_status == ScoreStatus.SCORED
        trial: Trial = {"passed": passed if scored else None, "score": float(score) if scored and score is not None else None}
        out[lane_id].setdefault(case_key, []).append(trial)
    return out

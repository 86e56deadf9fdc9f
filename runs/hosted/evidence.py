"""Each lane's evidence tier, for the scorecard (engine/scoring/tiers.py says what a tier means)."""

from __future__ import annotations

from engine.scoring.tiers import BLACK_BOX, NATIVE, TIER_LABELS, TIER_NAMES, lane_tier
from runs.hosted import HOSTED_EXTERNAL
from runs.models import CaseRun, Lane


def lane_evidence_tiers(lanes: list[Lane]) -> dict[int, dict[str, str]]:
    """``{lane_id: {"tier", "name", "label"}}``: native lanes are ``native``; a hosted lane is as observable
    as its least observed finished case (``black_box`` until one has finished). One query."""
    hosted = [lane.pk for lane in lanes if lane.runtime_profile_snapshot.get("execution_target") == HOSTED_EXTERNAL]
    seen: dict[int, list[str]] = {pk: [] for pk in hosted}
    if hosted:
        rows = CaseRun.objects.filter(lane_id__in=hosted).values_list("lane_id", "verification__evidence_tier")
        for lane_id, tier in rows:
            if isinstance(tier, str):
                seen[lane_id].append(tier)
    tiers = {lane.pk: (lane_tier(seen[lane.pk]) if seen.get(lane.pk) else BLACK_BOX) if lane.pk in seen else NATIVE for lane in lanes}
    return {pk: {"tier": tier, "name": TIER_NAMES[tier], "label": TIER_LABELS[tier]} for pk, tier in tiers.items()}

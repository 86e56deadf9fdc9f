"""Scoring: evidence → validators, metrics, judges, dimensions → case, lane and comparison scores.

Public API used by the Django side:
``CaseEvidence``, ``score_case``, ``aggregate_lane``, ``rank_lanes``,
``compare.build_comparison``, ``gates.evaluate_gate``, ``gates.parse_policy``,
``verification.run_post_execution``, ``judges.run_nwise_judge``. The documents they return are
typed in ``documents`` (``CaseScoreDocument``, ``LaneScorecardDocument``, ``RunScorecardDocument``,
``ComparisonSummary``, ``GateResultDocument``, ``GatePolicy``), the evaluation spec in ``spec``.
"""

from __future__ import annotations

from engine.scoring.aggregate import aggregate_lane, rank_lanes
from engine.scoring.evidence import CaseEvidence
from engine.scoring.score import CaseScore, score_case

__all__ = ["CaseEvidence", "CaseScore", "aggregate_lane", "rank_lanes", "score_case"]

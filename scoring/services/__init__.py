"""Scoring services: case → lane → run scorecards (runtime.md §5), called by the run lifecycle.

One module per record: a case's verdict (:mod:`scoring.services.cases`: its evidence, score,
``scoring.*`` events and save) and the lane and run scorecards (:mod:`scoring.services.scorecards`).
"""

from __future__ import annotations

from scoring.services.cases import (
    CaseScoring,
    case_run_score,
    case_scoring,
    case_scoring_save,
    evaluation_spec_for,
    evidence_for_case_run,
    security_policy_for,
    workspace_prices_for,
)
from scoring.services.scorecards import lane_score, run_score

__all__ = [
    "CaseScoring",
    "case_run_score",
    "case_scoring",
    "case_scoring_save",
    "evaluation_spec_for",
    "evidence_for_case_run",
    "lane_score",
    "run_score",
    "security_policy_for",
    "workspace_prices_for",
]

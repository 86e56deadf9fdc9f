"""Baseline-vs-candidate comparisons of lane scorecards (runtime.md §6.1).

Dimension deltas are computed on the normalised, higher-is-better scores, so
``better_direction`` is always ``higher`` and a positive delta is always an improvement.
The upstream quirk (normalised latency/cost scores labelled ``lower``) is deliberately not
copied; see docs/comparisons.md.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Literal, TypeGuard, cast

from engine.scoring.documents import (
    CaseDivergence,
    ComparisonSummary,
    DimensionDelta,
    FailureDivergence,
    LaneDimension,
    LaneRefs,
    LaneScorecardDocument,
    MetricDelta,
    SecurityComparison,
    Sides,
)
from engine.scoring.evidence import canonical_json
from engine.scoring.security import new_findings

SCHEMA_VERSION = "2026-05-05"
REASON_CODES = (
    "participant_count_mismatch",
    "cross_run_participant_matching_unsupported",
    "baseline_run_agent_unresolved",
    "candidate_run_agent_unresolved",
    "participant_match_not_resolved",
    "frozen_context_invalid",
    "missing_scorecard",
    "challenge_pack_version_mismatch",
    "challenge_input_set_mismatch",
    "evaluation_spec_mismatch",
    "challenge_coverage_mismatch",
    # One run told its agents the peers' standings (race context) and the other did not: the
    # agents did not face the same task (docs/runs.md, "Race context").
    "race_context_mismatch",
)
REF_CHECKS: tuple[tuple[Literal["pack_version_id", "input_set_id", "evaluation_spec_fingerprint"], str], ...] = (
    ("pack_version_id", "challenge_pack_version_mismatch"),
    ("input_set_id", "challenge_input_set_mismatch"),
    ("evaluation_spec_fingerprint", "evaluation_spec_mismatch"),
)


# What build_comparison and not_comparable take: a lane scorecard, or whatever a caller has in its
# place (None, a stand-in with only ``refs``); anything that is not a lane scorecard is not comparable.
Card = Mapping[str, object] | None


def fingerprint(baseline: Card, candidate: Card) -> str:
    return hashlib.sha256(canonical_json({"baseline": baseline, "candidate": candidate}).encode()).hexdigest()


def _refs(card: Card) -> LaneRefs:
    refs = card.get("refs") if isinstance(card, dict) else None
    # A lane scorecard's refs (aggregate_lane), or those of a caller's stand-in card.
    return cast(LaneRefs, dict(refs)) if isinstance(refs, dict) and refs else {}


def not_comparable(reason_code: str, reason: str, baseline: Card = None, candidate: Card = None) -> ComparisonSummary:
    """A non-comparable summary; the Django side uses this for run/agent resolution failures."""
    return {
        "schema_version": SCHEMA_VERSION,
        "status": "not_comparable",
        "reason_code": reason_code,
        "reason": reason,
        "refs": {"baseline": _refs(baseline), "candidate": _refs(candidate)},
        "matched_participants": [],
        "dimension_deltas": {},
        "metric_deltas": {},
        "scorecard_pass": {"baseline": None, "candidate": None},
        "scorecard_validity": {"baseline": None, "candidate": None},
        "case_divergence": None,
        "failure_divergence": None,
        "replay_divergence": None,
        "evidence_quality": {"missing_fields": [], "warnings": []},
        "regression": None,
        "fingerprint": fingerprint(baseline, candidate),
    }


def _is_scorecard(card: Card) -> TypeGuard[LaneScorecardDocument]:
    return isinstance(card, dict) and isinstance(card.get("dimensions"), dict) and "cases" in card


def _coverage(card: LaneScorecardDocument) -> set[str]:
    return {str(c.get("case_key")) for c in card.get("cases") or []}


def _dimension_deltas(baseline: LaneScorecardDocument, candidate: LaneScorecardDocument, missing: list[str]) -> dict[str, DimensionDelta]:
    out: dict[str, DimensionDelta] = {}
    b_dims, c_dims = baseline.get("dimensions") or {}, candidate.get("dimensions") or {}
    for key in sorted(set(b_dims) | set(c_dims)):
        b, c = b_dims.get(key), c_dims.get(key)
        if b is None:
            state = "missing_baseline"
        elif c is None:
            state = "missing_candidate"
        elif "error" in (b.get("state"), c.get("state")):
            state = "error"
        elif "not_applicable" in (b.get("state"), c.get("state")):
            # Applies to no case of one lane (e.g. it never had a mismatch to recover from): there is
            # no delta, and no evidence is missing.
            state = "not_applicable"
        elif b.get("state") != "available" or c.get("state") != "available" or None in (b.get("mean"), c.get("mean")):
            state = "unavailable"
        else:
            state = "available"
        b_value = b.get("mean") if b else None
        c_value = c.get("mean") if c else None
        either = c or b
        out[key] = {
            "baseline_value": b_value,
            "candidate_value": c_value,
            # Both are numbers whenever state is "available" (checked above).
            "delta": c_value - b_value if state == "available" and c_value is not None and b_value is not None else None,
            "better_direction": "higher",
            "declared_direction": either.get("declared_direction") if either else None,
            "source": either.get("source") if either else None,
            "state": state,
        }
        if state == "available" and c is not None and c.get("low_confidence"):
            out[key]["low_confidence"] = True
        if state not in ("available", "not_applicable"):
            out[key]["reason"] = _why_unavailable(b, c)
            missing.append(f"dimension_deltas.{key}")
    return out


def _why_unavailable(baseline: LaneDimension | None, candidate: LaneDimension | None) -> str:
    """Which side lacks the dimension and why (the lane rollup's reason), for gate messages."""
    parts = []
    for side, entry in (("candidate", candidate), ("baseline", baseline)):
        if entry is None:
            parts.append(f"the {side} scorecard does not have it")
        elif entry.get("state") != "available" or entry.get("mean") is None:
            parts.append(f"{side} {entry.get('state')}" + (f" ({entry['reason']})" if entry.get("reason") else ""))
    return "; ".join(parts)


def _metric_deltas(baseline: LaneScorecardDocument, candidate: LaneScorecardDocument) -> dict[str, MetricDelta]:
    """Raw, un-normalised numbers for people to read; gates use dimension deltas only."""

    def pick(card: LaneScorecardDocument) -> dict[str, tuple[float | None, str]]:
        latency, tokens = card.get("latency_ms"), card.get("tokens")
        return {
            "overall_score": (card.get("overall_score"), "higher"),
            "pass_rate": (card.get("pass_rate"), "higher"),
            "cost_usd": (card.get("cost_usd"), "lower"),
            "latency_p50_ms": (latency.get("p50") if latency else None, "lower"),
            "latency_p95_ms": (latency.get("p95") if latency else None, "lower"),
            "total_tokens": (tokens.get("total_tokens") if tokens else None, "lower"),
        }

    b, c = pick(baseline), pick(candidate)
    out: dict[str, MetricDelta] = {}
    for key, (b_value, direction) in b.items():
        c_value = c[key][0]
        delta = None if b_value is None or c_value is None else c_value - b_value
        out[key] = {"baseline": b_value, "candidate": c_value, "better_direction": direction, "delta": delta}
    return out


def _case_divergence(baseline: LaneScorecardDocument, candidate: LaneScorecardDocument) -> CaseDivergence:
    b_cases = {str(c.get("case_key")): c for c in baseline.get("cases") or []}
    c_cases = {str(c.get("case_key")): c for c in candidate.get("cases") or []}
    shared = sorted(set(b_cases) & set(c_cases))
    regressed = [k for k in shared if b_cases[k].get("passed") is True and c_cases[k].get("passed") is False]
    return {
        "passed_to_failed": regressed,
        "passed_to_failed_low_confidence": [k for k in regressed if c_cases[k].get("verdict_confidence") == "low"],
        "failed_to_passed": [k for k in shared if b_cases[k].get("passed") is False and c_cases[k].get("passed") is True],
        "completed_to_failed": [
            k for k in shared if b_cases[k].get("run_status") == "completed" and c_cases[k].get("run_status") in ("failed", "cancelled")
        ],
        "failed_to_completed": [
            k for k in shared if b_cases[k].get("run_status") in ("failed", "cancelled") and c_cases[k].get("run_status") == "completed"
        ],
        "unchanged": sum(1 for k in shared if b_cases[k].get("passed") == c_cases[k].get("passed")),
    }


def _failure_divergence(baseline: LaneScorecardDocument, candidate: LaneScorecardDocument) -> FailureDivergence:
    b_failed, c_failed = baseline.get("status") == "failed", candidate.get("status") == "failed"
    b_reason, c_reason = baseline.get("failure_reason"), candidate.get("failure_reason")
    b_replay = (baseline.get("replay_summary") or {}).get("terminal_status")
    c_replay = (candidate.get("replay_summary") or {}).get("terminal_status")
    return {
        "statuses": {"baseline": baseline.get("status"), "candidate": candidate.get("status")},
        "failure_reasons": {"baseline": b_reason, "candidate": c_reason},
        "terminal_replay_statuses": {"baseline": b_replay, "candidate": c_replay},
        "candidate_failed_baseline_succeeded": c_failed and not b_failed,
        "candidate_succeeded_baseline_failed": b_failed and not c_failed,
        "both_failed_differently": b_failed and c_failed and (b_reason != c_reason or b_replay != c_replay),
    }


def _replay_divergence(baseline: LaneScorecardDocument, candidate: LaneScorecardDocument, missing: list[str]) -> dict[str, int] | None:
    b, c = baseline.get("replay_summary"), candidate.get("replay_summary")
    if b is None and c is None:
        return None  # lane scorecards carry no replay summaries by default; nothing to compare
    if b is None or c is None:
        missing.append("replay_summary_divergence")
        return None
    b_counts, c_counts = b.get("counts") or {}, c.get("counts") or {}
    return {key: (c_counts.get(key) or 0) - (b_counts.get(key) or 0) for key in sorted(set(b_counts) | set(c_counts))}


def _security(baseline: LaneScorecardDocument, candidate: LaneScorecardDocument) -> SecurityComparison | None:
    """Security packs: each side's finding counts and the candidate's findings the baseline lacks."""
    b, c = baseline.get("security"), candidate.get("security")
    if not isinstance(b, dict) and not isinstance(c, dict):
        return None
    return {
        "baseline": {
            "counts": b.get("counts") if b else None,
            "blocked_cases": b.get("blocked_cases") if b else None,
            "evidence_missing_cases": b.get("evidence_missing_cases") if b else None,
        },
        "candidate": {
            "counts": c.get("counts") if c else None,
            "blocked_cases": c.get("blocked_cases") if c else None,
            "evidence_missing_cases": c.get("evidence_missing_cases") if c else None,
        },
        "new_findings": new_findings(b, c),
    }


def build_comparison(baseline: Card, candidate: Card) -> ComparisonSummary:
    """Compare two lane scorecards from ``aggregate_lane`` (optionally with extra ``refs``)."""
    if not _is_scorecard(baseline) or not _is_scorecard(candidate):
        side = "baseline" if not _is_scorecard(baseline) else "candidate"
        return not_comparable("missing_scorecard", f"the {side} has no scorecard", baseline, candidate)
    b_refs, c_refs = _refs(baseline), _refs(candidate)
    for field, code in REF_CHECKS:
        if b_refs.get(field) is not None and c_refs.get(field) is not None and b_refs[field] != c_refs[field]:
            return not_comparable(code, f"{field} differs ({b_refs[field]} vs {c_refs[field]})", baseline, candidate)
    b_cov, c_cov = _coverage(baseline), _coverage(candidate)
    if b_cov != c_cov:
        only_b, only_c = sorted(b_cov - c_cov), sorted(c_cov - b_cov)
        return not_comparable(
            "challenge_coverage_mismatch", f"cases only in baseline: {only_b}; only in candidate: {only_c}", baseline, candidate
        )
    missing: list[str] = []
    warnings: list[str] = []
    deltas = _dimension_deltas(baseline, candidate, missing)
    scorecard_pass: Sides[bool | None] = {"baseline": baseline.get("passed"), "candidate": candidate.get("passed")}
    for side, value in scorecard_pass.items():
        if value is None:
            missing.append(f"scorecard_pass.{side}")
    replay = _replay_divergence(baseline, candidate, missing)
    for side, card in (("baseline", baseline), ("candidate", candidate)):
        if card.get("validity") != "valid":
            warnings.append(f"{side} scorecard is {card.get('validity')}: {card.get('validity_reason', '')}")
    return {
        "schema_version": SCHEMA_VERSION,
        "status": "comparable",
        "reason_code": None,
        "reason": "",
        "refs": {"baseline": b_refs, "candidate": c_refs},
        "matched_participants": [{"baseline_lane_id": b_refs.get("lane_id"), "candidate_lane_id": c_refs.get("lane_id")}],
        "dimension_deltas": deltas,
        "metric_deltas": _metric_deltas(baseline, candidate),
        "scorecard_pass": scorecard_pass,
        "scorecard_validity": {"baseline": baseline.get("validity"), "candidate": candidate.get("validity")},
        "scorecard_validity_reason": {"baseline": baseline.get("validity_reason"), "candidate": candidate.get("validity_reason")},
        "case_divergence": _case_divergence(baseline, candidate),
        "failure_divergence": _failure_divergence(baseline, candidate),
        "replay_divergence": replay,
        "evidence_quality": {"missing_fields": missing, "warnings": warnings},
        "regression": {"baseline": baseline.get("regression_cases"), "candidate": candidate.get("regression_cases")},
        "security": _security(baseline, candidate),
        "fingerprint": fingerprint(baseline, candidate),
    }

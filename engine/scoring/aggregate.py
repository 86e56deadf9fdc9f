"""Lane scorecards (one lane = one run agent over every case) and lane ranking."""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping, Sequence
from typing import Literal

from engine.scoring.documents import (
    CaseCounts,
    CaseScoreDocument,
    LaneCaseRow,
    LaneDimension,
    LaneRanking,
    LaneRefs,
    LaneScorecardDocument,
    RegressionCaseResult,
    RunScorecardDocument,
)
from engine.scoring.evidence import canonical_json
from engine.scoring.score import CaseScore
from engine.scoring.security import security_rollup
from engine.scoring.spec import EvaluationSpec

LANE_SCHEMA = "lane-scorecard/1"


def spec_fingerprint(evaluation_spec: EvaluationSpec) -> str:
    return hashlib.sha256(canonical_json(evaluation_spec).encode()).hexdigest()


def percentile(values: list[float], q: float) -> float | None:
    """Linear interpolation between closest ranks (the numpy default)."""
    if not values:
        return None
    ordered = sorted(values)
    position = (len(ordered) - 1) * q
    low, high = math.floor(position), math.ceil(position)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def _as_dict(score: CaseScore | CaseScoreDocument) -> CaseScoreDocument:
    return score.as_dict() if isinstance(score, CaseScore) else score.copy()


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def aggregate_lane(
    evaluation_spec: EvaluationSpec, case_scores: Sequence[CaseScore | CaseScoreDocument], *, refs: LaneRefs | None = None
) -> LaneScorecardDocument:
    """Roll case scores up into a lane scorecard.

    ``refs`` carries identities the engine cannot know (run_id, lane_id, pack_version_id,
    input_set_id, and optionally status / failure_reason of the lane); comparisons read them.
    """
    spec = evaluation_spec if isinstance(evaluation_spec, dict) else {}
    cases = [_as_dict(s) for s in case_scores]
    refs = refs.copy() if refs else {}
    refs.setdefault("evaluation_spec_fingerprint", spec_fingerprint(spec))
    refs.setdefault("evaluation_spec_name", spec.get("name"))
    refs.setdefault("evaluation_spec_version", spec.get("version_number"))
    status, failure_reason = _lane_status(cases, refs)
    validity, validity_reason = _lane_validity(cases)
    passed_flags = [c.get("passed") for c in cases]
    costs = [c.get("cost_usd") for c in cases]
    latencies = [float(latency) for c in cases if (latency := c.get("latency_ms")) is not None]
    return {
        "schema": LANE_SCHEMA,
        "refs": refs,
        "status": status,
        "failure_reason": failure_reason,
        "strategy": (spec.get("scorecard") or {}).get("strategy") or "weighted",
        "overall_score": _mean([score for c in cases if (score := c.get("overall_score")) is not None]),
        "passed": _lane_passed(passed_flags),
        "pass_rate": (sum(p is True for p in passed_flags) / len(cases)) if cases else None,
        "validity": validity,
        "validity_reason": validity_reason,
        "case_counts": _case_counts(cases, passed_flags),
        "dimensions": {key: _dimension_rollup(key, cases) for key in _dimension_keys(cases)},
        "cost_usd": sum(c for c in costs if c is not None) if cases else None,
        "cost_complete": all(c is not None for c in costs),
        "latency_ms": {"p50": percentile(latencies, 0.5), "p95": percentile(latencies, 0.95), "mean": _mean(latencies)},
        "tokens": {
            "input_tokens": _token_total(cases, "input_tokens"),
            "output_tokens": _token_total(cases, "output_tokens"),
            "total_tokens": _token_total(cases, "total_tokens"),
        },
        "cases": [_case_row(c) for c in cases],
        "regression_cases": _regression_cases(cases),
        "warnings": sorted({w for c in cases for w in c.get("warnings", [])}),
        "security": security_rollup(cases),
    }


def _token_total(cases: list[CaseScoreDocument], key: Literal["input_tokens", "output_tokens", "total_tokens"]) -> int:
    return sum(int(usage.get(key) or 0) for c in cases if (usage := c.get("usage")))


def _dimension_keys(cases: list[CaseScoreDocument]) -> list[str]:
    """Every dimension key of every case, in first-seen order."""
    keys: list[str] = []
    for case in cases:
        keys += [k for k in case.get("dimensions", {}) if k not in keys]
    return keys


def _dimension_rollup(key: str, cases: list[CaseScoreDocument]) -> LaneDimension:
    entries = [c.get("dimensions", {}).get(key) for c in cases]
    scores = [score for e in entries if e and e.get("state") == "available" and (score := e.get("score")) is not None]
    # Cases the dimension does not apply to are left out; it is not_applicable only if it applies to none.
    states = [s for s in (e.get("state") if e else "unavailable" for e in entries) if s != "not_applicable"]
    if entries and not states:
        state = "not_applicable"
    else:
        state = "error" if "error" in states else "unavailable" if any(s != "available" for s in states) else "available"
    first = next((e for e in entries if e), None)
    scored = [e for e in entries if e and e.get("state") == "available" and e.get("score") is not None]
    return {
        "low_confidence": bool(scored) and all(e.get("low_confidence") for e in scored),
        "mean": _mean(scores),
        "state": state,
        "available_count": len(scores),
        "case_count": len(cases),
        "better_direction": "higher",
        "declared_direction": first.get("declared_direction") if first else None,
        "source": first.get("source") if first else None,
        "reason": _rollup_reason(state, cases, key),
    }


def _rollup_reason(state: str, cases: list[CaseScoreDocument], key: str) -> str:
    """Why a lane dimension is not available: the first case that lacks it, and its reason."""
    if state in ("available", "not_applicable"):
        return ""
    for case in cases:
        entry = (case.get("dimensions") or {}).get(key)
        if not entry or entry.get("state") not in ("available", "not_applicable"):
            reason = (entry.get("reason") if entry else None) or "not scored"
            return f"case {case.get('case_key')!r}: {reason}"
    return ""


def _lane_validity(cases: list[CaseScoreDocument]) -> tuple[str, str]:
    """The worst case validity, naming the first case that has it."""
    if not cases:
        return "invalid", "no cases were scored"
    for wanted in ("invalid", "degraded"):
        offender = next((c for c in cases if c.get("validity") == wanted), None)
        if offender is not None:
            return wanted, f"case {offender.get('case_key')!r}: {offender.get('validity_reason', '')}"
    return "valid", ""


def _lane_status(cases: list[CaseScoreDocument], refs: LaneRefs) -> tuple[str, str | None]:
    failed_runs = [c for c in cases if c.get("run_status") in ("failed", "cancelled")]
    status = refs.get("status") or ("failed" if cases and len(failed_runs) == len(cases) else "completed")
    failure_reason = refs.get("failure_reason") or next((c.get("stop_reason") for c in failed_runs), None)
    return status, failure_reason


def _lane_passed(passed_flags: list[bool | None]) -> bool | None:
    """False if any case failed (or there are none), None if any is unknown, else True."""
    if not passed_flags:
        return None
    if any(p is False for p in passed_flags):
        return False
    return None if any(p is None for p in passed_flags) else True


def _case_counts(cases: list[CaseScoreDocument], passed_flags: list[bool | None]) -> CaseCounts:
    return {
        "total": len(cases),
        "passed": sum(p is True for p in passed_flags),
        "failed": sum(p is False for p in passed_flags),
        "unknown": sum(p is None for p in passed_flags),
        "run_completed": sum(c.get("run_status") == "completed" for c in cases),
        "run_failed": sum(c.get("run_status") == "failed" for c in cases),
        "run_cancelled": sum(c.get("run_status") == "cancelled" for c in cases),
    }


def _case_row(case: CaseScoreDocument) -> LaneCaseRow:
    return {
        "case_key": case.get("case_key"),
        "overall_score": case.get("overall_score"),
        "passed": case.get("passed"),
        "validity": case.get("validity"),
        "run_status": case.get("run_status"),
        "stop_reason": case.get("stop_reason"),
        "status": case.get("status"),
        "overall_reason": case.get("overall_reason"),
        "dimensions": {k: v.get("score") for k, v in (case.get("dimensions") or {}).items()},
        "verdict_confidence": case.get("verdict_confidence"),
    }


def _regression_cases(cases: list[CaseScoreDocument]) -> list[RegressionCaseResult]:
    regression_cases: list[RegressionCaseResult] = []
    for case in cases:
        for detail in case.get("validator_details", []):
            tag = detail.get("regression")
            if tag:
                failed = detail.get("state") != "available" or detail.get("verdict") != "pass"
                regression_cases.append({**tag, "case_key": case.get("case_key"), "failed": failed})
    return regression_cases


def _mean_of(card: LaneScorecardDocument, key: str) -> float | None:
    """The lane's mean of one dimension, None when it has none."""
    dimension = (card.get("dimensions") or {}).get(key)
    return dimension.get("mean") if dimension else None


def _dimension_mean(card: LaneScorecardDocument, key: str) -> float:
    value = _mean_of(card, key)
    return value if value is not None else -1.0


def _p50_latency(card: LaneScorecardDocument) -> float | None:
    """The lane's median case latency in whole milliseconds, None when unknown."""
    p50 = (card.get("latency_ms") or {}).get("p50")
    return None if p50 is None else float(round(p50))


_RankKey = tuple[float, float, float, float, float]


def _rank_key(card: LaneScorecardDocument) -> _RankKey:
    """Higher is better on every element; missing values sort last."""
    score = card.get("overall_score")
    pass_rate = card.get("pass_rate")
    # Speed only separates lanes that earned something: among lanes scoring 0 the fast one is no
    # better (a silent agent is the fastest of all), so they stay tied.
    p50 = _p50_latency(card) if score else None
    return (
        score if score is not None else -1.0,
        _dimension_mean(card, "correctness"),
        _dimension_mean(card, "reliability"),
        pass_rate if pass_rate is not None else -1.0,
        -p50 if p50 is not None else float("-inf"),
    )


def rank_lanes(lane_scorecards: Mapping[str, LaneScorecardDocument]) -> RunScorecardDocument:
    """Rank lanes by overall score; ties broken by correctness, reliability, pass rate, then p50 latency.

    Lanes still equal on all five share a rank (dense "1224" competition ranking); if the top
    rank is shared, or no lane has an overall score, there is no winner. A single lane wins trivially.
    """
    ordered = sorted(lane_scorecards.items(), key=lambda item: (tuple(-v for v in _rank_key(item[1])), str(item[0])))
    ranking: list[LaneRanking] = []
    previous_key: _RankKey | None = None
    rank = 0
    for position, (lane_id, card) in enumerate(ordered, 1):
        key = _rank_key(card)
        if key != previous_key:
            rank, previous_key = position, key
        ranking.append(_ranking_row(lane_id, rank, card))
    winner, reason = _winner(ranking, [card for _, card in ordered])
    deltas = _winner_deltas(ordered[0][1], ordered[1][1]) if len(ordered) >= 2 else {}
    return {"ranking": ranking, "winner_lane_id": winner, "winner_reason": reason, "dimension_deltas_winner_vs_runner_up": deltas}


def _ranking_row(lane_id: str, rank: int, card: LaneScorecardDocument) -> LaneRanking:
    return {
        "lane_id": lane_id,
        "rank": rank,
        "overall_score": card.get("overall_score"),
        "pass_rate": card.get("pass_rate"),
        "passed": card.get("passed"),
        "validity": card.get("validity"),
        "correctness": _mean_of(card, "correctness"),
        "reliability": _mean_of(card, "reliability"),
        "p50_latency_ms": _p50_latency(card),
    }


_TIE_BREAKERS = ("overall score", "correctness", "reliability", "pass rate")


def _winner(ranking: list[LaneRanking], ordered: list[LaneScorecardDocument]) -> tuple[str | None, str]:
    """The winning lane (or None) and why: the first criterion that separates it from the runner-up."""
    if not ranking:
        return None, "no lanes"
    if len(ranking) == 1:
        return ranking[0]["lane_id"], "single lane"
    if ranking[0]["overall_score"] is None:
        return None, "no lane has an overall score"
    top = [r for r in ranking if r["rank"] == 1]
    if len(top) > 1:
        return None, "tie for first place"
    first, second = _rank_key(ordered[0]), _rank_key(ordered[1])
    if first[0] != second[0]:
        return top[0]["lane_id"], "highest overall score"
    for position, name in enumerate(_TIE_BREAKERS[1:], 1):
        if first[position] != second[position]:
            return top[0]["lane_id"], f"equal overall score, higher {name}"
    fast, slow = ranking[0]["p50_latency_ms"], ranking[1]["p50_latency_ms"]
    slow_text = "unknown" if slow is None else f"{slow:g} ms"
    return top[0]["lane_id"], f"equal scores, faster (p50 latency {fast:g} ms vs {slow_text})"


def _winner_deltas(first: LaneScorecardDocument, second: LaneScorecardDocument) -> dict[str, float | None]:
    """Per dimension, the first lane's mean minus the second's (None when either has none)."""
    deltas: dict[str, float | None] = {}
    for key in sorted(set(first.get("dimensions", {})) | set(second.get("dimensions", {}))):
        a, b = _mean_of(first, key), _mean_of(second, key)
        deltas[key] = None if a is None or b is None else a - b
    return deltas

from __future__ import annotations

from typing import Any, cast

import pytest

from engine.scoring import aggregate_lane, rank_lanes, score_case
from engine.scoring.documents import LaneRefs, LaneScorecardDocument
from engine.tests.scoring.helpers import evidence, run_events, spec

SPEC = spec(dimensions=["correctness", "reliability"], scorecard={"pass_threshold": 0.7})


def lane(outputs: list[str], *, failed: frozenset[int] = frozenset(), **refs: Any) -> LaneScorecardDocument:
    scores = []
    for i, out in enumerate(outputs):
        ev = evidence(
            out,
            case_key=f"c{i}",
            events=run_events(out, latency_ms=1000 * (i + 1), failed=i in failed).items,
            status="failed" if i in failed else "completed",
        )
        scores.append(score_case(SPEC, ev))
    return aggregate_lane(SPEC, scores, refs=cast(LaneRefs, refs) if refs else None)


def test_lane_scorecard_rolls_up_cases() -> None:
    card = lane(["42", "41", "42"])
    assert card["case_counts"]["total"] == 3
    assert card["pass_rate"] == 2 / 3
    assert card["passed"] is False
    assert card["dimensions"]["correctness"]["mean"] == 2 / 3
    assert card["latency_ms"]["p50"] == 2000 and card["latency_ms"]["p95"] == 2900
    assert card["tokens"]["total_tokens"] == 4500
    assert card["cost_usd"] > 0
    assert [c["case_key"] for c in card["cases"]] == ["c0", "c1", "c2"]
    assert card["refs"]["evaluation_spec_fingerprint"]


def test_lane_validity_is_the_worst_case_validity() -> None:
    missing = spec([{"key": "f", "type": "contains", "target": "file:x", "expected_from": "literal:x"}])
    card = aggregate_lane(missing, [score_case(missing, evidence("42"))])
    assert card["validity"] == "degraded"
    assert aggregate_lane(SPEC, [])["validity"] == "invalid"


def test_lane_accepts_case_score_dicts_and_is_deterministic() -> None:
    scores = [score_case(SPEC, evidence("42")).as_dict()]
    assert aggregate_lane(SPEC, scores) == aggregate_lane(SPEC, scores)


def test_a_lane_whose_every_case_failed_is_failed() -> None:
    card = lane(["42"], failed=frozenset({0}))
    assert card["status"] == "failed"
    assert card["failure_reason"] is None or isinstance(card["failure_reason"], str)


def test_ranking_orders_by_score_and_names_a_winner() -> None:
    result = rank_lanes({"a": lane(["41", "41"]), "b": lane(["42", "42"]), "c": lane(["42", "41"])})
    assert [r["lane_id"] for r in result["ranking"]] == ["b", "c", "a"]
    assert result["winner_lane_id"] == "b"


def test_ties_share_a_rank_and_have_no_winner() -> None:
    result = rank_lanes({"a": lane(["42"]), "b": lane(["42"])})
    assert [r["rank"] for r in result["ranking"]] == [1, 1]
    assert result["winner_lane_id"] is None


def test_tie_on_score_is_broken_by_correctness() -> None:
    a: Any = {"overall_score": 0.8, "dimensions": {"correctness": {"mean": 0.9}}, "pass_rate": 1.0}  # partial scorecards
    b: Any = {"overall_score": 0.8, "dimensions": {"correctness": {"mean": 0.7}}, "pass_rate": 1.0}
    assert rank_lanes({"a": a, "b": b})["winner_lane_id"] == "a"


def test_single_lane_wins_trivially_and_no_lanes_has_no_winner() -> None:
    assert rank_lanes({"only": lane(["41"])})["winner_lane_id"] == "only"
    assert rank_lanes({})["winner_lane_id"] is None


def case_score(key: str, **fields: Any) -> Any:  # a partial CaseScoreDocument: what aggregate_lane reads
    return {"case_key": key, "run_status": "completed", "passed": True, "validity": "valid", "overall_score": 1.0, **fields}


def dim(score: float | None, state: str = "available", **extra: Any) -> Any:
    return {"score": score, "state": state, **extra}


def test_a_lane_scorecard_holds_every_roll_up() -> None:
    cases = [
        case_score(
            "a",
            overall_score=0.5,
            passed=False,
            cost_usd=0.25,
            latency_ms=100,
            usage={"input_tokens": 1, "output_tokens": 2, "total_tokens": 3},
            dimensions={"correctness": dim(0.5, declared_direction="higher", source="validators", low_confidence=True)},
            verdict_confidence="low",
            validator_details=[{"regression": {"suite": "s"}, "state": "available", "verdict": "pass"}],
            warnings=["w2", "w1"],
            stop_reason="done",
            status="scored",
            overall_reason="why",
        ),
        case_score(
            "b",
            run_status="failed",
            passed=None,
            overall_score=None,
            cost_usd=None,
            latency_ms=300,
            stop_reason="timeout",
            dimensions={"correctness": dim(None, "error"), "latency": dim(0.9, source="latency")},
            validator_details=[{"regression": {"suite": "t"}, "state": "available", "verdict": "fail"}, {"state": "error"}],
            warnings=["w1"],
        ),
    ]
    card: Any = aggregate_lane({"name": "s", "version_number": 2, "scorecard": {"strategy": "binary"}}, cases, refs={"run_id": "r"})
    refs = card.pop("refs")
    assert refs["run_id"] == "r" and refs["evaluation_spec_name"] == "s" and refs["evaluation_spec_version"] == 2
    assert len(refs["evaluation_spec_fingerprint"]) == 64
    assert card == {
        "schema": "lane-scorecard/1",
        "status": "completed",
        "failure_reason": "timeout",
        "strategy": "binary",
        "overall_score": 0.5,
        "passed": False,
        "pass_rate": 0.0,
        "validity": "valid",
        "validity_reason": "",
        "case_counts": {"total": 2, "passed": 0, "failed": 1, "unknown": 1, "run_completed": 1, "run_failed": 1, "run_cancelled": 0},
        "dimensions": {
            "correctness": {
                "low_confidence": True,  # its one scored case rests on a low-confidence judge result
                "mean": 0.5,
                "state": "error",
                "available_count": 1,
                "case_count": 2,
                "better_direction": "higher",
                "declared_direction": "higher",
                "source": "validators",
                "reason": "case 'b': not scored",
            },
            "latency": {
                "low_confidence": False,
                "mean": 0.9,
                "state": "unavailable",
                "available_count": 1,
                "case_count": 2,
                "better_direction": "higher",
                "declared_direction": None,
                "source": "latency",
                "reason": "case 'a': not scored",
            },
        },
        "cost_usd": 0.25,
        "cost_complete": False,
        "latency_ms": {"p50": 200.0, "p95": 290.0, "mean": 200.0},
        "tokens": {"input_tokens": 1, "output_tokens": 2, "total_tokens": 3},
        "cases": [
            {
                "case_key": "a",
                "overall_score": 0.5,
                "passed": False,
                "validity": "valid",
                "run_status": "completed",
                "stop_reason": "done",
                "status": "scored",
                "overall_reason": "why",
                "dimensions": {"correctness": 0.5},
                "verdict_confidence": "low",
            },
            {
                "case_key": "b",
                "overall_score": None,
                "passed": None,
                "validity": "valid",
                "run_status": "failed",
                "stop_reason": "timeout",
                "status": None,
                "overall_reason": None,
                "dimensions": {"correctness": None, "latency": 0.9},
                "verdict_confidence": None,
            },
        ],
        "regression_cases": [
            {"suite": "s", "case_key": "a", "failed": False},
            {"suite": "t", "case_key": "b", "failed": True},
        ],
        "warnings": ["w1", "w2"],
        "security": None,
    }


def test_an_empty_lane_is_invalid_with_nothing_to_roll_up() -> None:
    card = aggregate_lane("not a spec", [])  # type: ignore[arg-type]
    assert card["refs"]["evaluation_spec_name"] is None
    assert {
        k: card[k] for k in ("status", "passed", "pass_rate", "validity", "validity_reason", "cost_usd", "cost_complete", "strategy")
    } == {
        "status": "completed",
        "passed": None,
        "pass_rate": None,
        "validity": "invalid",
        "validity_reason": "no cases were scored",
        "cost_usd": None,
        "cost_complete": True,
        "strategy": "weighted",
    }
    assert card["latency_ms"] == {"p50": None, "p95": None, "mean": None}


@pytest.mark.parametrize(
    ("validities", "validity", "reason"),
    [
        ([("a", "valid", ""), ("b", "valid", "")], "valid", ""),
        ([("a", "degraded", "no file"), ("b", "invalid", "no spec"), ("c", "invalid", "x")], "invalid", "case 'b': no spec"),
        ([("a", "valid", ""), ("b", "degraded", "no file")], "degraded", "case 'b': no file"),
    ],
)
def test_a_lanes_validity_is_its_worst_cases(validities: list[tuple[str, str, str]], validity: str, reason: str) -> None:
    card = aggregate_lane({}, [case_score(k, validity=v, validity_reason=r) for k, v, r in validities])
    assert (card["validity"], card["validity_reason"]) == (validity, reason)


@pytest.mark.parametrize(
    ("flags", "passed"),
    [([True, True], True), ([True, None], None), ([None, False], False)],
)
def test_a_lane_passes_only_when_every_case_passed(flags: list[bool | None], passed: bool | None) -> None:
    assert aggregate_lane({}, [case_score(str(i), passed=p) for i, p in enumerate(flags)])["passed"] is passed


@pytest.mark.parametrize(
    ("run_statuses", "refs", "status", "reason"),
    [
        (["failed", "cancelled"], None, "failed", "boom"),
        (["failed", "completed"], None, "completed", "boom"),
        (["failed"], {"status": "cancelled", "failure_reason": "user"}, "cancelled", "user"),
        (["completed"], None, "completed", None),
    ],
)
def test_a_lanes_status_comes_from_its_runs_unless_given(
    run_statuses: list[str], refs: LaneRefs | None, status: str, reason: str | None
) -> None:
    cases = [case_score(str(i), run_status=s, stop_reason="boom" if s != "completed" else None) for i, s in enumerate(run_statuses)]
    card = aggregate_lane({}, cases, refs=refs)
    assert (card["status"], card["failure_reason"]) == (status, reason)


def test_a_dimension_missing_from_a_case_is_unavailable_for_the_lane() -> None:
    card = aggregate_lane({}, [case_score("a", dimensions={"x": dim(1.0)}), case_score("b")])
    assert card["dimensions"]["x"]["state"] == "unavailable" and card["dimensions"]["x"]["mean"] == 1.0


def test_ranking_reports_why_there_is_no_winner_and_the_deltas() -> None:
    scored: Any = {"overall_score": 0.9, "dimensions": {"correctness": {"mean": 0.8}}, "pass_rate": 1.0}  # partial scorecards
    runner_up: Any = {"overall_score": 0.5, "dimensions": {"correctness": {"mean": 0.6}, "latency": {"mean": 0.1}}}
    result = rank_lanes({"a": runner_up, "b": scored})
    assert (result["winner_lane_id"], result["winner_reason"]) == ("b", "highest overall score")
    assert result["dimension_deltas_winner_vs_runner_up"] == {"correctness": pytest.approx(0.2), "latency": None}
    empty: Any = {}
    unscored = rank_lanes({"a": empty, "b": empty})
    assert (unscored["winner_lane_id"], unscored["winner_reason"]) == (None, "no lane has an overall score")
    twin: Any = dict(scored)
    assert rank_lanes({"a": scored, "b": twin})["winner_reason"] == "tie for first place"


def test_a_tie_on_every_score_goes_to_the_lane_with_the_lower_p50_latency() -> None:
    # Issue 25: two scripted lanes both under the pack's latency target score latency 1.000, so
    # the scores tie; the 30x slower one must not share first place with the fast one.
    fast: Any = {"overall_score": 1.0, "dimensions": {"latency": {"mean": 1.0}}, "pass_rate": 1.0, "latency_ms": {"p50": 40.2}}
    slow: Any = {**fast, "latency_ms": {"p50": 1200.0}}
    result = rank_lanes({"a-slow": slow, "b-fast": fast})
    assert result["winner_lane_id"] == "b-fast"
    assert result["winner_reason"] == "equal scores, faster (p50 latency 40 ms vs 1200 ms)"
    assert [(r["lane_id"], r["rank"], r["p50_latency_ms"]) for r in result["ranking"]] == [("b-fast", 1, 40.0), ("a-slow", 2, 1200.0)]
    unknown: Any = {**fast, "latency_ms": {"p50": None}}
    assert rank_lanes({"a": unknown, "b": fast})["winner_reason"] == "equal scores, faster (p50 latency 40 ms vs unknown)"
    # Sub-millisecond jitter is not a difference; a better score still beats a faster lane.
    jitter: Any = {**fast, "latency_ms": {"p50": 39.9}}
    assert rank_lanes({"a": fast, "b": jitter})["winner_reason"] == "tie for first place"
    # Among lanes that earned nothing, speed is no merit: a silent agent is the fastest of all.
    silent: Any = {"overall_score": 0.0, "pass_rate": 0.0, "latency_ms": {"p50": 3.0}}
    failed: Any = {**silent, "latency_ms": {"p50": 900.0}}
    assert rank_lanes({"a": failed, "b": silent})["winner_reason"] == "tie for first place"
    better: Any = {**slow, "overall_score": 1.0, "pass_rate": 1.0, "dimensions": {"correctness": {"mean": 1.0}}}
    assert rank_lanes({"a": better, "b": fast})["winner_reason"] == "equal overall score, higher correctness"

from __future__ import annotations

from engine.scoring import aggregate_lane, rank_lanes, score_case
from engine.tests.scoring.helpers import evidence, run_events, spec

SPEC = spec(dimensions=["correctness", "reliability"], scorecard={"pass_threshold": 0.7})


def lane(outputs: list[str], *, failed: set[int] = frozenset(), **refs) -> dict:
    scores = []
    for i, out in enumerate(outputs):
        ev = evidence(
            out,
            case_key=f"c{i}",
            events=run_events(out, latency_ms=1000 * (i + 1), failed=i in failed).items,
            status="failed" if i in failed else "completed",
        )
        scores.append(score_case(SPEC, ev))
    return aggregate_lane(SPEC, scores, refs=refs or None)


def test_lane_scorecard_rolls_up_cases():
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


def test_lane_validity_is_the_worst_case_validity():
    missing = spec([{"key": "f", "type": "contains", "target": "file:x", "expected_from": "literal:x"}])
    card = aggregate_lane(missing, [score_case(missing, evidence("42"))])
    assert card["validity"] == "degraded"
    assert aggregate_lane(SPEC, [])["validity"] == "invalid"


def test_lane_accepts_case_score_dicts_and_is_deterministic():
    scores = [score_case(SPEC, evidence("42")).as_dict()]
    assert aggregate_lane(SPEC, scores) == aggregate_lane(SPEC, scores)


def test_a_lane_whose_every_case_failed_is_failed():
    card = lane(["42"], failed={0})
    assert card["status"] == "failed"
    assert card["failure_reason"] is None or isinstance(card["failure_reason"], str)


def test_ranking_orders_by_score_and_names_a_winner():
    result = rank_lanes({"a": lane(["41", "41"]), "b": lane(["42", "42"]), "c": lane(["42", "41"])})
    assert [r["lane_id"] for r in result["ranking"]] == ["b", "c", "a"]
    assert result["winner_lane_id"] == "b"


def test_ties_share_a_rank_and_have_no_winner():
    result = rank_lanes({"a": lane(["42"]), "b": lane(["42"])})
    assert [r["rank"] for r in result["ranking"]] == [1, 1]
    assert result["winner_lane_id"] is None


def test_tie_on_score_is_broken_by_correctness():
    a = {"overall_score": 0.8, "dimensions": {"correctness": {"mean": 0.9}}, "pass_rate": 1.0}
    b = {"overall_score": 0.8, "dimensions": {"correctness": {"mean": 0.7}}, "pass_rate": 1.0}
    assert rank_lanes({"a": a, "b": b})["winner_lane_id"] == "a"


def test_single_lane_wins_trivially_and_no_lanes_has_no_winner():
    assert rank_lanes({"only": lane(["41"])})["winner_lane_id"] == "only"
    assert rank_lanes({})["winner_lane_id"] is None

from __future__ import annotations

from typing import cast

from engine.scoring import aggregate_lane, score_case
from engine.scoring.compare import build_comparison, not_comparable
from engine.scoring.documents import LaneRefs, LaneScorecardDocument
from engine.tests.scoring.helpers import evidence, run_events, spec

SPEC = spec(
    dimensions=[
        "correctness",
        "reliability",
        {"key": "latency", "source": "latency", "better_direction": "lower", "normalization": {"target": 1000, "max": 5000}},
    ],
    scorecard={"pass_threshold": 0.7},
)


def lane(outputs: dict[str, str], *, latency_ms: int = 2000, failed: bool = False, s=SPEC, **refs) -> LaneScorecardDocument:
    scores = [
        score_case(
            s,
            evidence(
                out,
                case_key=key,
                events=run_events(out, latency_ms=latency_ms, failed=failed).items,
                status="failed" if failed else "completed",
            ),
        )
        for key, out in outputs.items()
    ]
    return aggregate_lane(s, scores, refs=cast(LaneRefs, {"pack_version_id": "pv1", "input_set_id": "is1", **refs}))


def test_identical_lanes_are_comparable_with_zero_deltas():
    comparison = build_comparison(lane({"a": "42"}), lane({"a": "42"}))
    assert comparison["status"] == "comparable" and comparison["schema_version"] == "2026-05-05"
    assert all(d["delta"] == 0 for d in comparison["dimension_deltas"].values())
    assert comparison["evidence_quality"]["missing_fields"] == []


def test_latency_deltas_are_on_the_higher_is_better_basis():
    comparison = build_comparison(lane({"a": "42"}, latency_ms=2000), lane({"a": "42"}, latency_ms=4000))
    latency = comparison["dimension_deltas"]["latency"]
    assert latency["better_direction"] == "higher" and latency["declared_direction"] == "lower"
    assert latency["delta"] < 0  # slower candidate → lower score → negative delta = worse
    assert comparison["metric_deltas"]["latency_p50_ms"]["delta"] == 2000


def test_per_case_divergence_lists_flipped_cases():
    comparison = build_comparison(lane({"a": "42", "b": "41"}), lane({"a": "41", "b": "42"}))
    assert comparison["case_divergence"]["passed_to_failed"] == ["a"]
    assert comparison["case_divergence"]["failed_to_passed"] == ["b"]
    assert comparison["scorecard_pass"] == {"baseline": False, "candidate": False}


def test_failure_divergence_flags_candidate_failure():
    comparison = build_comparison(lane({"a": "42"}), lane({"a": "42"}, failed=True))
    assert comparison["failure_divergence"]["candidate_failed_baseline_succeeded"] is True
    assert comparison["case_divergence"]["completed_to_failed"] == ["a"]


def test_both_failed_differently_compares_failure_reasons():
    base = lane({"a": "42"}, failed=True, failure_reason="timeout")
    cand = lane({"a": "42"}, failed=True, failure_reason="step_limit")
    assert build_comparison(base, cand)["failure_divergence"]["both_failed_differently"] is True


def test_non_comparable_reason_codes():
    assert build_comparison(None, lane({"a": "42"}))["reason_code"] == "missing_scorecard"
    assert build_comparison(lane({"a": "42"}), lane({"a": "42"}, pack_version_id="pv2"))["reason_code"] == "challenge_pack_version_mismatch"
    assert build_comparison(lane({"a": "42"}), lane({"a": "42"}, input_set_id="is2"))["reason_code"] == "challenge_input_set_mismatch"
    other = {**SPEC, "version_number": 2}
    assert build_comparison(lane({"a": "42"}), lane({"a": "42"}, s=other))["reason_code"] == "evaluation_spec_mismatch"
    assert build_comparison(lane({"a": "42"}), lane({"b": "42"}))["reason_code"] == "challenge_coverage_mismatch"
    assert not_comparable("participant_count_mismatch", "x")["status"] == "not_comparable"


def test_unavailable_dimensions_are_missing_evidence():
    s = spec([{"key": "f", "type": "contains", "target": "file:x", "expected_from": "literal:x"}], ["correctness"])
    comparison = build_comparison(lane({"a": "42"}, s=s), lane({"a": "42"}, s=s))
    assert comparison["dimension_deltas"]["correctness"]["state"] == "unavailable"
    assert "dimension_deltas.correctness" in comparison["evidence_quality"]["missing_fields"]


def test_missing_dimension_on_one_side():
    base, cand = lane({"a": "42"}), lane({"a": "42"})
    del cand["dimensions"]["latency"]
    assert build_comparison(base, cand)["dimension_deltas"]["latency"]["state"] == "missing_candidate"


def test_fingerprint_is_deterministic_and_input_sensitive():
    base, cand = lane({"a": "42"}), lane({"a": "41"})
    assert build_comparison(base, cand)["fingerprint"] == build_comparison(base, cand)["fingerprint"]
    assert build_comparison(base, cand)["fingerprint"] != build_comparison(cand, base)["fingerprint"]

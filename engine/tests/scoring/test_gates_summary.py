from __future__ import annotations

from typing import Any

from engine.scoring.gates import evaluate_gate


def _comparison(**deltas: float) -> Any:  # a partial ComparisonSummary
    return {
        "status": "comparable",
        "scorecard_validity": {"baseline": "valid", "candidate": "valid"},
        "evidence_quality": {"missing_fields": []},
        "dimension_deltas": {key: {"state": "available", "delta": value, "better_direction": "higher"} for key, value in deltas.items()},
    }


def test_the_summary_says_which_dimension_dropped_and_by_how_much():
    result = evaluate_gate(_comparison(correctness=-0.3, reliability=0.0, latency=-0.07, cost=0.0))
    assert result["verdict"] == "fail"
    assert result["summary"] == "release gate failed: correctness dropped by 0.300 (fails at 0.05)"


def test_a_warning_summary_names_the_warning_threshold():
    result = evaluate_gate(_comparison(correctness=0.0, reliability=-0.03, latency=0.0, cost=0.0))
    assert result["verdict"] == "warn"
    assert result["summary"] == "release gate warns: reliability dropped by 0.030 (warns at 0.02)"

from __future__ import annotations

import pytest

from engine.scoring.dimensions import DimensionScore
from engine.scoring.strategies import overall


def dim(key, score, *, state="available", weight=1.0, gate=False, threshold=None) -> DimensionScore:
    return DimensionScore(
        key=key,
        source="validators",
        state=state,
        score=score if state == "available" else None,
        reason="",
        weight=weight,
        gate=gate,
        pass_threshold=threshold,
        declared_direction="higher",
    )


def test_weighted_mean_uses_weights_and_passes_above_threshold():
    result = overall("weighted", [dim("a", 1.0, weight=3), dim("b", 0.0, weight=1)], 0.7)
    assert result.score == pytest.approx(0.75)
    assert result.passed is True


def test_weighted_threshold_is_inclusive_and_fails_below():
    assert overall("weighted", [dim("a", 0.7)], 0.7).passed is True
    assert overall("weighted", [dim("a", 0.69)], 0.7).passed is False


def test_weighted_zero_total_weight_uses_plain_mean():
    assert overall("weighted", [dim("a", 1.0, weight=0), dim("b", 0.0, weight=0)], None).score == 0.5


def test_weighted_gate_below_threshold_vetoes_but_keeps_the_score():
    result = overall("weighted", [dim("a", 0.5, gate=True, threshold=0.8), dim("b", 1.0)], None)
    assert (result.score, result.passed) == (0.75, False)
    assert "gate 'a'" in result.reason


def test_weighted_unavailable_gate_is_unscored_and_unavailable_dims_are_skipped():
    # a gate that could not be scored decides the case: unscored, neither passed nor failed
    result = overall("weighted", [dim("a", None, state="unavailable", gate=True, threshold=0.5), dim("b", 1.0)], None)
    assert (result.score, result.passed) == (None, None)
    # a failed gate beside it fails the case whatever the missing one would say
    failed = overall(
        "weighted", [dim("a", None, state="unavailable", gate=True, threshold=0.5), dim("b", 0.1, gate=True, threshold=0.5)], None
    )
    assert failed.passed is False
    result = overall("weighted", [dim("a", None, state="unavailable"), dim("b", 1.0)], None)
    assert (result.score, result.passed) == (1.0, True)


def test_weighted_with_nothing_available():
    assert overall("weighted", [dim("a", None, state="unavailable")], None).passed is None
    result = overall("weighted", [dim("a", None, state="unavailable", gate=True, threshold=0.5)], None)
    assert (result.score, result.passed) == (None, False)


def test_binary_needs_every_dimension_at_its_threshold():
    assert overall("binary", [dim("a", 1.0, threshold=1.0), dim("b", 0.6, threshold=0.5)], None).score == 1.0
    result = overall("binary", [dim("a", 1.0, threshold=1.0), dim("b", 0.4, threshold=0.5)], None)
    assert (result.score, result.passed) == (0.0, False)


def test_binary_missing_dimension_fails_and_ignores_scorecard_threshold():
    assert overall("binary", [dim("a", None, state="unavailable", threshold=1.0)], None).passed is False
    assert overall("binary", [dim("a", 1.0, threshold=1.0)], 0.99).passed is True


def test_hybrid_gates_then_weighted_mean_of_non_gates():
    dims = [dim("g", 0.9, gate=True, threshold=0.8), dim("a", 0.6), dim("b", 0.8)]
    result = overall("hybrid", dims, 0.7)
    assert result.score == pytest.approx(0.7)
    assert result.passed is True


def test_hybrid_failed_gate_scores_zero():
    result = overall("hybrid", [dim("g", 0.5, gate=True, threshold=0.8), dim("a", 1.0)], None)
    assert (result.score, result.passed) == (0.0, False)


def test_hybrid_with_only_gates_scores_one_and_without_gates_fails():
    assert overall("hybrid", [dim("g", 0.9, gate=True, threshold=0.8)], None).score == 1.0
    assert overall("hybrid", [dim("a", 1.0)], None).passed is False

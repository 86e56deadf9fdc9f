"""The release gate on a comparison's trials (engine side): policy fields, the three outcomes, the one-trial rules kept."""

from __future__ import annotations

import copy
from typing import cast

import pytest

from engine.scoring import stats
from engine.scoring.documents import ComparisonSummary
from engine.scoring.gates import DEFAULT_POLICY, evaluate_gate, normalize_policy, policy_fingerprint, statistics_lines, trial_statistics


def columns(patterns: dict[str, str]) -> dict[str, stats.TrialColumns]:
    """``{case: "PPF-"}`` → stored trial columns (P pass, F fail, - unscored), through the product's writer."""
    flags = {"P": True, "F": False, "-": None}
    return stats.trials_to_columns(
        {key: [{"passed": flags[c], "score": None if c == "-" else 1.0 if c == "P" else 0.0} for c in p] for key, p in patterns.items()}
    )


def summary(baseline: dict[str, str], candidate: dict[str, str], **extra: object) -> ComparisonSummary:
    """A comparable summary with nothing else to gate on but the trials (and case regressions, if any)."""
    return cast(
        ComparisonSummary,
        {
            "status": "comparable",
            "dimension_deltas": {},
            "case_divergence": {"passed_to_failed": ["c0"]},
            "trials": {"baseline": columns(baseline), "candidate": columns(candidate)},
            **extra,
        },
    )


SAME = {f"c{i}": "PPPPPPPPPP" for i in range(30)}
WORSE = {f"c{i}": "PPFFFFFFFF" for i in range(30)}
CLOSE = {f"c{i}": "PPPPPPPPPF" for i in range(30)}


def test_stored_trials_are_compact_and_read_back_as_they_were():
    trials: dict[str, list[stats.Trial]] = {
        "a": [{"passed": True, "score": 0.123456}, {"passed": False, "score": None}, {"passed": None, "score": None}],
        "b": [{"passed": False, "score": 1.7}],
    }
    stored = stats.trials_to_columns(trials)
    assert stored == {"a": {"passed": "PF-", "score": [0.1235, None, None]}, "b": {"passed": "F", "score": [1.0]}}
    back = stats.columns_to_trials(stored)
    assert back["a"][0] == {"passed": True, "score": 0.1235} and back["a"][2] == {"passed": None, "score": None}
    assert back["b"] == [{"passed": False, "score": 1.0}]  # scores are clamped to [0, 1] as the gate reads them
    # A stored document with odd values reads as unscored trials, never as failures.
    assert stats.columns_to_trials({"c": {"passed": "PX", "score": ["x"]}, "d": "junk"}) == {
        "c": [{"passed": True, "score": None}, {"passed": None, "score": None}]
    }


def test_policies_take_max_regression_and_confidence_and_keep_old_fingerprints():
    assert normalize_policy({"max_regression": 0.1, "confidence": 0.9}) == {**DEFAULT_POLICY, "max_regression": 0.1, "confidence": 0.9}
    custom = {"policy_key": "mine", "dimensions": {"correctness": {"fail_delta": 0.1}}}
    assert "max_regression" not in normalize_policy(custom)
    assert policy_fingerprint(normalize_policy(None)) == policy_fingerprint(copy.deepcopy(DEFAULT_POLICY))
    assert normalize_policy({**custom, "max_regression": 0})["max_regression"] == 0.0


@pytest.mark.parametrize(
    ("policy", "message"),
    [
        ({"confidence": 1}, "confidence must be from 0.5 to below 1"),
        ({"confidence": True}, "confidence must be a number"),
        ({"max_regression": 1.0}, "max_regression must be from 0 to below 1"),
        ({"max_regression": -0.01}, "max_regression must be from 0 to below 1"),
        ({"max_regression": "0.1"}, "max_regression must be a number"),
    ],
)
def test_bad_trial_fields_are_refused_by_name(policy, message):
    with pytest.raises(ValueError, match=message):
        normalize_policy(policy)


def test_the_gate_passes_fails_or_asks_for_more_trials_on_the_paired_interval():
    passed = evaluate_gate(summary(SAME, SAME))
    assert (passed["verdict"], passed["reason_code"]) == ("pass", "within_tolerance")
    failed = evaluate_gate(summary(SAME, WORSE))
    assert (failed["verdict"], failed["reason_code"]) == ("fail", "trial_regression")
    close = evaluate_gate(summary(SAME, CLOSE), {"max_regression": 0.09})
    assert (close["verdict"], close["reason_code"]) == ("insufficient_evidence", "trials_insufficient")
    statistics = close["statistics"]
    assert statistics and statistics["trials_per_case"] == 10 and statistics["more_trials_per_case"]
    # A case regression (one trial's rule) does not fail a gate that the trials decide.
    assert "case_regression" not in {t["condition"] for t in passed["triggered_conditions"]}


def test_one_trial_per_case_keeps_the_rules_for_one_trial():
    one = {f"c{i}": "P" for i in range(30)}
    result = evaluate_gate(summary(one, one))
    assert (result["verdict"], result["reason_code"]) == ("fail", "case_regression")  # the stored case regression decides
    assert result["statistics"] and result["statistics"]["single_trial"] is True
    assert statistics_lines(result["statistics"]) == [
        "trials: 1 trial per case: decided by the rules for one trial (case regressions, dimension thresholds), no interval"
    ]


def test_a_comparison_without_trials_has_no_statistics():
    result = evaluate_gate(cast(ComparisonSummary, {"status": "comparable", "dimension_deltas": {}}))
    assert result["statistics"] is None and result["verdict"] == "pass" and statistics_lines(None) == []


def test_adaptive_trials_are_read_with_the_sequential_test_unless_nothing_is_tolerated():
    adaptive = summary(SAME, WORSE, trials_sequential=True)
    statistics = trial_statistics(adaptive, {"max_regression": 0.05})
    assert statistics and {c["method"] for c in statistics["comparisons"]} == {"sequential"}
    assert statistics["decision"] == "fail"
    exact = trial_statistics(adaptive, {"max_regression": 0})
    assert exact and {c["method"] for c in exact["comparisons"]} == {"paired_t"}
    assert "with the sequential test" in statistics_lines(statistics)[0]

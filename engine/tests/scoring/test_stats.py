from __future__ import annotations

import itertools
import math
import random

import pytest

from engine.providers import create_provider
from engine.scoring import stats
from engine.types import JSON, Message, ModelRequest, ToolDefinition


def trials(*outcomes, score=None):
    """One case's trials from pass/fail flags (None: unscored)."""
    return [{"passed": o, "score": (1.0 if o else 0.0) if score is None and o is not None else score} for o in outcomes]


def lane(cases):
    """``{case: "PPF"}`` → a lane's trials (P pass, F fail, - unscored)."""
    flags = {"P": True, "F": False, "-": None}
    return {key: trials(*(flags[c] for c in pattern)) for key, pattern in cases.items()}


def bernoulli_lane(rng, probabilities, repeats):
    return {f"c{i}": trials(*(rng.random() < p for _ in range(repeats))) for i, p in enumerate(probabilities)}


# --- estimators against known values -------------------------------------------------------


def test_the_wilson_interval_of_8_of_10_is_the_textbook_one():
    low, high = stats.wilson_interval(8, 10)
    assert (round(low, 4), round(high, 4)) == (0.4902, 0.9433)


def test_the_wilson_interval_of_7_of_10_worked_by_hand():
    # z = 1.95996, z² = 3.84146: centre (0.7 + z²/20) / (1 + z²/10) = 0.64449,
    # half-width z·sqrt(0.7·0.3/10 + z²/400) / (1 + z²/10) = 0.24771.
    low, high = stats.wilson_interval(7, 10)
    assert (round(low, 4), round(high, 4)) == (0.3968, 0.8922)


def test_pass_at_k_and_pass_hat_k_for_3_passes_of_10_worked_by_hand():
    # pass@5: 1 - C(7,5)/C(10,5) = 1 - 21/252 = 11/12; pass^5: C(3,5) = 0 (three passes cannot fill five trials);
    # pass^2: C(3,2)/C(10,2) = 3/45.
    assert stats.pass_at_k(10, 3, 5) == pytest.approx(11 / 12)
    assert stats.pass_hat_k(10, 3, 5) == 0.0
    assert stats.pass_hat_k(10, 3, 2) == pytest.approx(1 / 15)
    result = stats.lane_statistics({"a": trials(*[True] * 3 + [False] * 7)})
    assert result["pass_at_k"]["5"] == pytest.approx(11 / 12) and result["pass_hat_k"]["2"] == pytest.approx(1 / 15)
    assert result["pass_at_k"]["10"] == 1.0 and result["trials"] == 10 and result["flaky_cases"] == ["a"]


def test_the_wilson_interval_stays_inside_0_and_1_and_knows_nothing_without_trials():
    assert stats.wilson_interval(10, 10)[1] == 1.0 and stats.wilson_interval(10, 10)[0] == pytest.approx(0.7225, abs=1e-4)
    assert stats.wilson_interval(0, 10)[0] == 0.0
    assert stats.wilson_interval(0, 0) == (0.0, 1.0)


@pytest.mark.parametrize(("df", "expected"), [(1, 12.706205), (2, 4.302653), (9, 2.262157), (30, 2.042272), (1000, 1.962339)])
def test_student_t_quantiles_match_the_tables(df, expected):
    assert stats.student_t_quantile(0.975, df) == pytest.approx(expected, abs=1e-6)
    assert stats.student_t_quantile(0.025, df) == pytest.approx(-expected, abs=1e-6)


def test_the_t_interval_of_one_to_five():
    low, high = stats.mean_interval_t([1, 2, 3, 4, 5])
    half = 2.776445 * math.sqrt(2.5 / 5)
    assert low == pytest.approx(3 - half, abs=1e-5) and high == pytest.approx(3 + half, abs=1e-5)
    with pytest.raises(ValueError, match="two values"):
        stats.mean_interval_t([1])


def _subsets_with_a_pass(n, c, k):
    outcomes = [True] * c + [False] * (n - c)
    subsets = list(itertools.combinations(outcomes, k))
    return sum(any(s) for s in subsets) / len(subsets), sum(all(s) for s in subsets) / len(subsets)


@pytest.mark.parametrize("n", range(1, 8))
def test_pass_at_k_and_pass_hat_k_equal_the_share_of_k_subsets_by_brute_force(n):
    for c in range(n + 1):
        for k in range(1, n + 1):
            any_pass, all_pass = _subsets_with_a_pass(n, c, k)
            assert stats.pass_at_k(n, c, k) == pytest.approx(any_pass)
            assert stats.pass_hat_k(n, c, k) == pytest.approx(all_pass)


def test_pass_at_k_known_values_from_the_codex_formula():
    assert stats.pass_at_k(10, 3, 1) == pytest.approx(0.3)
    assert stats.pass_at_k(10, 3, 5) == pytest.approx(1 - math.comb(7, 5) / math.comb(10, 5))  # 0.9167
    assert stats.pass_at_k(200, 1, 100) == pytest.approx(0.5)
    assert stats.pass_hat_k(10, 7, 2) == pytest.approx(21 / 45)
    with pytest.raises(ValueError, match="k <= n"):
        stats.pass_at_k(3, 1, 4)


def test_the_bootstrap_is_deterministic_for_a_seed_and_differs_across_seeds():
    values = [0.1, 0.4, 0.4, 0.8, 0.9, 1.0, 0.3, 0.65]
    first = stats.mean_interval_bootstrap(values, seed=7)
    assert stats.mean_interval_bootstrap(values, seed=7) == first
    assert stats.mean_interval_bootstrap(values, seed=8) != first
    mean = sum(values) / len(values)
    assert min(values) <= first[0] < mean < first[1] <= max(values)
    assert stats.mean_interval_bootstrap([0.5, 0.5, 0.5]) == (0.5, 0.5)


@pytest.mark.parametrize("bad", [1.0, 0.4, "0.95", True, float("nan")])
def test_a_confidence_outside_half_to_one_is_refused_by_name(bad):
    with pytest.raises(ValueError, match=r"^confidence must"):
        stats.wilson_interval(1, 2, bad)


# --- one lane ------------------------------------------------------------------------------


def test_a_one_trial_lane_says_plainly_that_it_has_no_uncertainty_estimate():
    result = stats.lane_statistics(lane({"a": "P", "b": "F", "c": "P"}))
    assert result["pass_rate"] == pytest.approx(2 / 3) and result["trials"] == 1
    assert result["pass_rate_ci"] is None and result["score_ci"] is None
    assert result["uncertainty"] == stats.NO_UNCERTAINTY
    assert result["pass_at_k"] == {"1": pytest.approx(2 / 3)} and result["flaky_cases"] == []


def test_lane_statistics_weigh_cases_equally_and_leave_unscored_trials_out():
    result = stats.lane_statistics(lane({"a": "PPPP", "b": "PF-F", "c": "FFF-", "d": "----"}))
    assert result["cases"] == 3 and result["trials"] == 3 and result["trials_total"] == 10
    assert result["case_pass_rates"] == {"a": 1.0, "b": pytest.approx(1 / 3), "c": 0.0}
    assert result["pass_rate"] == pytest.approx((1 + 1 / 3 + 0) / 3)
    assert result["flaky_cases"] == ["b"]
    # pass@2 per case: a 1, b 1 - C(2,2)/C(3,2) = 2/3, c 0; pass^2: a 1, b 0, c 0.
    assert result["pass_at_k"]["2"] == pytest.approx((1 + 2 / 3) / 3)
    assert result["pass_hat_k"]["2"] == pytest.approx(1 / 3)
    assert set(result["pass_at_k"]) == {"1", "2", "3"}
    low, high = result["pass_rate_ci"]
    assert low < result["pass_rate"] < high and result["uncertainty"] == ""
    assert result["score_ci"][0] <= result["score"] <= result["score_ci"][1]


def test_trials_of_one_case_count_less_than_independent_ones():
    # The same 20 passes of 40: decided per case (5 always pass, 5 always fail) or mixed in every case.
    clustered = stats.lane_statistics(lane({f"c{i}": "PPPP" if i < 5 else "FFFF" for i in range(10)}))
    mixed = stats.lane_statistics(lane({f"c{i}": "PFPF" for i in range(10)}))
    assert clustered["pass_rate"] == mixed["pass_rate"] == 0.5
    width = {name: r["pass_rate_ci"][1] - r["pass_rate_ci"][0] for name, r in (("clustered", clustered), ("mixed", mixed))}
    assert width["clustered"] > width["mixed"]
    # Clustered trials are worth about one sample per case: close to Wilson(5 of 10), not Wilson(20 of 40).
    assert clustered["pass_rate_ci"][0] < stats.wilson_interval(5, 10)[0] + 0.02
    assert mixed["pass_rate_ci"] == pytest.approx(list(stats.wilson_interval(20, 40)))


# --- the gate: fixed trials ----------------------------------------------------------------


def test_the_gate_passes_when_the_interval_excludes_the_tolerated_drop():
    base = bernoulli_lane(random.Random(1), [0.3, 0.6, 0.9, 0.95] * 25, 10)
    result = stats.paired_comparison(base, base)
    assert result["decision"] == stats.PASS and result["difference"] == 0.0
    assert -0.05 < result["interval"][0] < 0 < result["interval"][1]
    assert result["more_trials_per_case"] is None and "no drop beyond the tolerated 0.05" in result["reason"]


def test_the_gate_fails_when_the_interval_lies_beyond_the_tolerated_drop():
    rng = random.Random(2)
    probabilities = [rng.uniform(0.5, 1.0) for _ in range(40)]
    base = bernoulli_lane(rng, probabilities, 8)
    cand = bernoulli_lane(rng, [p - 0.3 for p in probabilities], 8)
    result = stats.paired_comparison(cand, base)
    assert result["decision"] == stats.FAIL and result["interval"][1] < -0.05
    assert result["difference"] == pytest.approx(result["candidate"] - result["baseline"])
    assert result["reason"].startswith("the pass rate dropped by")


def test_too_little_evidence_is_insufficient_with_an_estimate_of_the_trials_that_would_decide():
    base = lane({f"c{i}": "PPF" for i in range(10)})
    cand = lane({f"c{i}": "PPF" if i % 3 else "PFF" for i in range(10)})
    result = stats.paired_comparison(cand, base)
    assert result["decision"] == stats.INSUFFICIENT
    assert result["interval"][0] < -0.05 < result["interval"][1]
    more = result["more_trials_per_case"]
    assert isinstance(more, int) and more >= 1 and f"about {more} more trial" in result["reason"]


def test_the_estimated_trials_do_decide_when_the_estimate_holds():
    # Same per-case rates with the suggested number of trials: the interval now excludes the drop.
    base, cand = lane({f"c{i}": "PPFF" for i in range(20)}), lane({f"c{i}": "PPFF" for i in range(20)})
    first = stats.paired_comparison(cand, base)
    assert first["decision"] == stats.INSUFFICIENT
    total = first["trials_per_case"] + first["more_trials_per_case"]
    half = total // 2
    grown = lane({f"c{i}": "P" * half + "F" * (total - half) for i in range(20)})
    assert stats.paired_comparison(grown, grown)["decision"] == stats.PASS
    shorter = lane({f"c{i}": "P" * half + "F" * (total - 1 - half) for i in range(20)})
    assert stats.paired_comparison(shorter, shorter)["decision"] == stats.INSUFFICIENT


def test_when_cases_disagree_more_trials_alone_cannot_decide():
    # Half the cases got much better, half much worse, every trial the same: only more cases would tell.
    base = lane({f"c{i}": "PPPPPPPPPP" if i % 2 else "FFFFFFFFFF" for i in range(12)})
    cand = lane({f"c{i}": "FFFFFFFFFF" if i % 2 else "PPPPPPPPPP" for i in range(12)})
    result = stats.paired_comparison(cand, base)
    assert result["decision"] == stats.INSUFFICIENT and result["more_trials_per_case"] is None
    assert "more trials per case alone are unlikely to decide" in result["reason"]


def test_cases_scored_on_one_side_only_are_named_and_left_out():
    base = lane({"a": "PP", "b": "PP", "c": "PP"})
    cand = lane({"a": "PP", "b": "PP", "d": "FF"})
    result = stats.paired_comparison(cand, base)
    assert result["cases"] == 2 and result["unpaired_cases"] == ["c", "d"]
    one = stats.paired_comparison(lane({"a": "P"}), lane({"a": "P"}))
    assert one["decision"] == stats.INSUFFICIENT and "at least two cases" in one["reason"]


def test_the_score_metric_compares_mean_scores():
    base = {f"c{i}": trials(True, True, True, score=0.9) for i in range(30)}
    cand = {f"c{i}": trials(True, True, True, score=0.6) for i in range(30)}
    result = stats.paired_comparison(cand, base, metric="score")
    assert result["decision"] == stats.FAIL and result["difference"] == pytest.approx(-0.3)
    assert "the score dropped by 0.300" in result["reason"]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"max_regression": -0.1}, "^max_regression must"),
        ({"max_regression": 1}, "^max_regression must"),
        ({"confidence": 1.5}, "^confidence must"),
        ({"metric": "latency"}, "^metric must be one of pass_rate, score"),
    ],
)
def test_bad_gate_parameters_are_refused_by_name(kwargs, message):
    with pytest.raises(ValueError, match=message):
        stats.paired_comparison(lane({"a": "P"}), lane({"a": "P"}), **kwargs)


def test_the_lane_gate_shares_the_error_rate_between_metrics_and_fails_on_either():
    base = {f"c{i}": trials(True, True, True, score=0.9) for i in range(60)}
    cand = {f"c{i}": trials(True, True, True, score=0.5) for i in range(60)}  # same passes, lower scores
    gate = stats.lane_gate(cand, base)
    assert [c["metric"] for c in gate["comparisons"]] == ["pass_rate", "score"]
    assert all(c["confidence"] == pytest.approx(0.975) for c in gate["comparisons"])
    assert [c["decision"] for c in gate["comparisons"]] == [stats.PASS, stats.FAIL]
    assert gate["decision"] == stats.FAIL and gate["reason"].startswith("the score dropped")
    assert gate["trials_per_case"] == 3 and gate["single_trial"] is False


def test_the_lane_gate_says_when_it_had_one_trial_and_when_it_had_nothing():
    one = stats.lane_gate(lane({"a": "P", "b": "F"}), lane({"a": "P", "b": "F"}), metrics=["pass_rate"])
    assert one["single_trial"] is True and one["comparisons"][0]["confidence"] == 0.95
    nothing = stats.lane_gate(lane({"a": "--"}), lane({"a": "PP"}))
    assert nothing["decision"] == stats.INSUFFICIENT and nothing["comparisons"] == []


# --- the gate: adaptive trials -------------------------------------------------------------


def test_the_sequential_interval_is_the_inverted_pair_of_tests():
    base = lane({f"c{i}": "PF" for i in range(50)})  # 100 pairs, every difference 0
    result = stats.sequential_comparison(base, base)
    # variance (0 + 1 pseudo-observation) / 100; half-width m/2 + ln(40)·variance/(N·m)
    half = 0.025 + math.log(40) * 0.01 / (100 * 0.05)
    assert result["interval"] == [pytest.approx(-half), pytest.approx(half)]
    assert result["decision"] == stats.PASS and result["method"] == "sequential"


def test_the_sequential_interval_is_wider_than_the_fixed_one_on_the_same_trials():
    rng = random.Random(3)
    probabilities = [rng.uniform(0.2, 1.0) for _ in range(60)]
    base, cand = bernoulli_lane(rng, probabilities, 6), bernoulli_lane(rng, probabilities, 6)
    fixed, sequential = stats.paired_comparison(cand, base), stats.sequential_comparison(cand, base)
    assert fixed["difference"] == pytest.approx(sequential["difference"])
    assert sequential["interval"][1] - sequential["interval"][0] > fixed["interval"][1] - fixed["interval"][0]


def test_adaptive_trials_need_a_positive_tolerance():
    with pytest.raises(ValueError, match=r"^max_regression must be greater than 0 for adaptive trials"):
        stats.sequential_comparison(lane({"a": "P"}), lane({"a": "P"}), max_regression=0)


def _adaptive_run(rng, base_p, cand_p, max_repeats):
    base: dict[str, list[stats.Trial]] = {}
    cand: dict[str, list[stats.Trial]] = {}
    done = 0
    while True:
        for lane_trials, probabilities in ((base, base_p), (cand, cand_p)):
            for i, p in enumerate(probabilities):
                lane_trials.setdefault(f"c{i}", []).extend(trials(rng.random() < p))
        done += 1
        decision = stats.lane_gate(cand, base, sequential=True, metrics=["pass_rate"])["decision"]
        plan = stats.adaptive_plan({"candidate": decision}, trials_done=done, max_repeats=max_repeats)
        if plan["stop"]:
            return decision, done, plan["reason"]
        assert plan["lanes"] == ["candidate"] and plan["baseline"] is True


def test_adaptive_trials_stop_as_soon_as_the_verdict_is_decided():
    rng = random.Random(4)
    probabilities = [rng.uniform(0.3, 1.0) for _ in range(200)]
    assert _adaptive_run(rng, probabilities, [p - 0.4 for p in probabilities], 20) == (stats.FAIL, 1, "decided")
    decision, done, reason = _adaptive_run(rng, probabilities, probabilities, 20)
    assert (decision, reason) == (stats.PASS, "decided") and 1 < done < 20


def test_adaptive_trials_stop_when_the_budget_is_spent():
    rng = random.Random(5)
    probabilities = [rng.uniform(0.3, 1.0) for _ in range(20)]
    assert _adaptive_run(rng, probabilities, [p - 0.05 for p in probabilities], 3) == (stats.INSUFFICIENT, 3, "budget_spent")


def test_the_adaptive_plan_tops_up_only_undecided_lanes():
    decisions = {"b": stats.INSUFFICIENT, "a": stats.PASS, "c": stats.INSUFFICIENT, "d": stats.FAIL}
    plan = stats.adaptive_plan(decisions, trials_done=2, max_repeats=10)
    assert (plan["stop"], plan["reason"], plan["lanes"], plan["baseline"]) == (False, "undecided", ["b", "c"], True)
    done = stats.adaptive_plan({"a": stats.PASS}, trials_done=2, max_repeats=10)
    assert (done["stop"], done["reason"], done["lanes"], done["baseline"]) == (True, "decided", [], False)


@pytest.mark.parametrize("bad", [0, 51, True, 2.0])
def test_max_repeats_outside_one_to_fifty_is_refused_by_name(bad):
    with pytest.raises(ValueError, match=r"^max_repeats must be an integer from 1 to 50"):
        stats.adaptive_plan({}, trials_done=0, max_repeats=bad)


# --- a stochastic scripted agent's true pass rate, measured ---------------------------------

MIX: dict[str, JSON] = {
    "seed": 11,
    "script_mix": [
        {"weight": 0.7, "script": {"default": [{"submit": "right"}]}},
        {"weight": 0.3, "script": {"default": [{"submit": "wrong"}]}},
    ],
}


def _answer(case_key, trial):
    provider = create_provider("scripted", api_key=None, base_url=None, deployment_config=MIX, case_key=case_key, trial=trial)
    request = ModelRequest(model="m", messages=[Message("user", "go")], tools=[ToolDefinition("submit", "", {})])
    return provider.complete(request).tool_calls[0].arguments


def test_a_seeded_script_mix_gives_an_agent_its_known_pass_rate():
    agent = {f"case-{i}": trials(*('"right"' in _answer(f"case-{i}", t) for t in range(10))) for i in range(200)}
    result = stats.lane_statistics(agent)
    assert abs(result["pass_rate"] - 0.7) < 0.04  # 2000 draws: about 4 standard errors
    assert result["pass_rate_ci"][0] < 0.7 < result["pass_rate_ci"][1]
    assert len(result["flaky_cases"]) > 150  # a 0.7 agent rarely passes or fails all 10 trials of a case
    again = {f"case-{i}": trials(*('"right"' in _answer(f"case-{i}", t) for t in range(10))) for i in range(200)}
    assert again == agent


def _same_trials(passed: bool, n: int) -> list[stats.Trial]:
    return [{"passed": passed, "score": 1.0 if passed else 0.0} for _ in range(n)]


def test_a_case_settles_only_after_enough_identical_trials_on_both_sides():
    k = stats.SETTLE_TRIALS
    candidate: dict[str, list[stats.Trial]] = {
        "same": _same_trials(True, k),
        "both_fail": _same_trials(False, k),
        "young": _same_trials(True, k - 1),
        "one_flip": [*_same_trials(True, k - 1), {"passed": False, "score": 0.0}],
        "differ": _same_trials(True, k),  # all pass against all fail: certain, but not the same outcome
        "score_moves": [*_same_trials(True, k - 1), {"passed": True, "score": 0.5}],
        "unscored": [*_same_trials(True, k - 1), {"passed": None, "score": None}],
    }
    baseline = {key: _same_trials(True, k) for key in candidate}
    baseline["both_fail"] = _same_trials(False, k + 3)  # more baseline trials (another candidate's): the first k count
    baseline["young"] = _same_trials(True, k - 1)
    baseline["differ"] = _same_trials(False, k)
    assert stats.settled_cases(candidate, baseline) == {"same", "both_fail"}


def test_settled_cases_are_carried_forward_so_every_case_weighs_the_same():
    k = stats.SETTLE_TRIALS
    rng = random.Random(4)
    flaky_c: list[stats.Trial] = [{"passed": rng.random() < 0.5, "score": None} for _ in range(k + 6)]
    flaky_b: list[stats.Trial] = [{"passed": rng.random() < 0.5, "score": None} for _ in range(k + 6)]
    candidate: dict[str, list[stats.Trial]] = {"flaky": flaky_c, "easy": [{"passed": True, "score": None}] * k}
    baseline: dict[str, list[stats.Trial]] = {"flaky": flaky_b, "easy": [{"passed": True, "score": None}] * k}
    ours, theirs = stats.carry_settled(candidate, baseline)
    assert len(ours["easy"]) == len(theirs["easy"]) == k + 6 and ours["flaky"] == flaky_c
    # The gate on the carried trials is the gate of the easy case run every round.
    topped_c: dict[str, list[stats.Trial]] = {**candidate, "easy": [{"passed": True, "score": None}] * (k + 6)}
    topped_b: dict[str, list[stats.Trial]] = {**baseline, "easy": [{"passed": True, "score": None}] * (k + 6)}
    stopped = stats.lane_gate(candidate, baseline, sequential=True)
    assert stopped == stats.lane_gate(topped_c, topped_b, sequential=True)
    assert stats.sequential_comparison(candidate, baseline)["difference"] != stopped["comparisons"][0]["difference"]  # uncarried: reweighed

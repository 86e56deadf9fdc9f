"""Statistics over repeated trials: intervals, pass@k, flaky cases and gates that decide on evidence.

Real agents are stochastic, so a lane runs each case several times (*trials*) and a verdict needs
error bars. Everything here is a pure function over plain data: a lane's trials are
``{case_key: [Trial, …]}`` in trial order, a ``Trial`` being ``{"passed": bool | None, "score":
float | None}`` (``None``: the harness could not score that trial; it is left out, never counted as
a failure). docs/scorecards-and-gates.md, "Statistics and trials (engine)", says it in plain words.

**Per lane** (:func:`lane_statistics`): the pass rate is the mean of the cases' pass rates (every
case weighs the same, however many trials it has), with a Wilson interval whose sample size is the
*effective* number of independent trials (Kish's design effect: trials of one case are correlated,
so 5 trials of 20 cases are worth fewer than 100 independent ones); the mean score with a seeded,
case-clustered percentile bootstrap (it stays inside the scores' range, where a t interval of
bounded, skewed scores can leave [0, 1]); pass@k and pass^k with the unbiased estimators of Chen et
al. 2021; per-case pass rates and the flaky cases (mixed outcomes). One trial per case gives no
interval: the statistics say so instead.

**Fixed comparisons** (:func:`paired_comparison`): the candidate's and the baseline's trials are
paired case by case; each case gives one difference ``d = mean(candidate) - mean(baseline)`` and
the interval is a Student-t interval of the mean of those differences (cases are the independent
units, trials are clustered in them; Miller 2024, "Adding error bars to evals"). It covers the mean
difference over the pack's cases, conservatively: it also allows for the cases being a sample.
``fail`` when the whole interval lies below ``-max_regression``, ``pass`` when it lies above, else
``insufficient_evidence`` with an estimate of the trials per case that would decide (the variance
split into a between-case part, which more trials do not shrink, and a within-case part).

**Adaptive comparisons** (:func:`sequential_comparison`, :func:`adaptive_plan`): looking after
every round and stopping when the gate decides would inflate a fixed interval's error rate, so the
adaptive gate uses two one-sided sequential probability ratio tests (Wald), read as e-values: "no
drop beyond the tolerance" (``Δ = -m``) against "no change" (``Δ = 0``) decides ``pass``, and
``Δ = -m`` against "twice the tolerance" (``Δ = -2m``) decides ``fail``. A likelihood ratio is a
nonnegative supermartingale under its null (and under any ``Δ`` beyond it: the normal family has a
monotone likelihood ratio), so by Ville's inequality it ever reaches ``1/α'`` with probability at
most ``α'``, however often it is looked at; ``α' = (1 - confidence) / 2`` per side, like the two
tails of the fixed interval. Inverting the family of such tests gives a confidence *sequence*,
``Δ̂ ± (m/2 + L·σ²/(N·m))`` with ``L = ln(1/α')`` over ``N`` trial pairs, and the decision is the
fixed one read on it. Why SPRTs and not a mixture (Robbins) confidence sequence or a betting one:
the gate only has to resolve drops of size ``m``, and a test aimed at that alternative stops
soonest there (the mixture sequence needs about 1.25× the trials to resolve ``m``, printed by
bench/gate_power.py); a betting sequence needs observations of one common mean, which single
trials of cases of different difficulty are not, and whole rounds are too few to bet on.

The test reads the per-trial differences as normal with an estimated variance: a round's sum over
many cases is close to normal, and the variance gets one pseudo-observation of unit squared
deviation so an early, unanimous round never looks certain. The guarantee is therefore
approximate, and bench/gate_power.py measures it at exactly the tolerance, where it is tightest.
**Per-case top-up** (:func:`settled_cases`, :func:`carry_settled`): a new round adds a trial only to
the cases of an undecided lane whose paired outcome is still uncertain. A case is *settled* when
it has at least :data:`SETTLE_TRIALS` scored trials on each side and every one of them, on both
sides, has the same verdict and the same score (all pass against all pass, or all fail against
all fail): its trial differences are all 0. The test pools trial pairs, so a case with fewer
trials would weigh less than the others and the estimate would be reweighed by how the cases
looked so far; instead, before the test, a settled case's trials are carried forward on both sides
to the most trials any case has (:func:`carry_settled`). For a case that is deterministic on both
sides, the carried trials are exactly what running them would have given, so the test sees the
same numbers as with every case topped up, and its guarantee is unchanged. What it gives up: a
case that only *looked* deterministic (the two sides differ in it by ``δ``) agrees ``k`` times
on each side with probability at most ``(1 - δ)^k``, and then hides its ``δ``. With ``k = 2``
(the first round) bench/gate_power.py measured the error at exactly the tolerance at 9.2 %
against 2.8 % without top-up (easy cases hid small regressions); with ``k = 6`` the error rates
match topping up every case. A case that disagrees even once is never settled.
"""

from __future__ import annotations

import functools
import math
import random
from collections.abc import Callable, Mapping, Sequence
from statistics import NormalDist
from typing import Final, Literal, TypedDict

PASS: Final = "pass"
FAIL: Final = "fail"
INSUFFICIENT: Final = "insufficient_evidence"
Decision = Literal["pass", "fail", "insufficient_evidence"]
Metric = Literal["pass_rate", "score"]
METRICS: tuple[Metric, ...] = ("pass_rate", "score")
DEFAULT_CONFIDENCE = 0.95
DEFAULT_MAX_REGRESSION = 0.05
MAX_REPEATS = 50  # the most trials of one case a run may ask for
BOOTSTRAP_RESAMPLES = 2000
_MAX_TRIALS_ESTIMATE = 10_000  # beyond this, "more trials would decide" is not a useful answer
NO_UNCERTAINTY = "One trial per case: no uncertainty estimate. Run at least 2 trials per case (repeats) for intervals."


class Trial(TypedDict):
    passed: bool | None
    score: float | None


LaneTrials = Mapping[str, Sequence[Trial]]


class LaneStatistics(TypedDict):
    cases: int  # cases with at least one scored trial
    trials: int  # trials per case: the fewest any of those cases has
    trials_total: int
    confidence: float
    pass_rate: float | None
    pass_rate_ci: list[float] | None  # [low, high]; None with one trial per case
    score: float | None
    score_ci: list[float] | None
    pass_at_k: dict[str, float]  # "1" … str(trials)
    pass_hat_k: dict[str, float]
    case_pass_rates: dict[str, float]
    flaky_cases: list[str]
    uncertainty: str  # "" or the sentence saying there is no estimate


class PairedComparison(TypedDict):
    metric: str  # pass_rate | score
    method: str  # paired_t | sequential
    cases: int
    trials_per_case: int  # the fewest scored trials of a paired case, on either side
    candidate: float | None
    baseline: float | None
    difference: float | None  # candidate - baseline: negative is a drop
    interval: list[float] | None
    confidence: float
    max_regression: float
    decision: str
    more_trials_per_case: int | None  # None: more trials alone would not decide (or it is decided)
    reason: str
    unpaired_cases: list[str]


class LaneGate(TypedDict):
    decision: str
    reason: str
    trials_per_case: int
    single_trial: bool
    comparisons: list[PairedComparison]


class GateStatistics(LaneGate):
    """What a release gate read from the trials (``gates.trial_statistics``), stored with its verdict."""

    max_regression: float
    confidence: float
    more_trials_per_case: int | None  # when undecided: about how many more trials per case would decide
    note: str  # one sentence: how many trials, and whether the trials or today's rules decided


class TrialColumns(TypedDict):
    """One case's trials, stored compactly (a comparison's ``trials``): trial ``i`` is ``passed[i]``
    (``P`` passed, ``F`` failed, ``-`` not scored) and ``score[i]`` (to 4 decimals, or null)."""

    passed: str
    score: list[float | None]


_FLAGS: Final = {True: "P", False: "F", None: "-"}
_READ_FLAGS: Final = {"P": True, "F": False}
SCORE_DECIMALS = 4  # a stored score's precision: far finer than any tolerance a gate is given


class AdaptivePlan(TypedDict):
    stop: bool
    reason: str  # decided | budget_spent | undecided (runs/pipeline/rounds.py adds settled)
    lanes: list[str]  # candidate lanes that get another round
    baseline: bool  # the baseline gets another round too
    trials_done: int
    max_repeats: int


def trials_to_columns(trials: LaneTrials) -> dict[str, TrialColumns]:
    """A lane's trials as stored with a comparison: two lanes of 500 cases × 10 trials take about 120 KB of JSON, where
    a list of objects took about 300 KB (bench/scorecard_statistics.py)."""
    return {
        key: {
            "passed": "".join(_FLAGS[t.get("passed")] for t in case),
            "score": [None if (score := _unit(t.get("score"))) is None else round(score, SCORE_DECIMALS) for t in case],
        }
        for key, case in trials.items()
    }


def columns_to_trials(columns: Mapping[str, object]) -> dict[str, list[Trial]]:
    """The inverse of :func:`trials_to_columns`, tolerant of a stored document's odd values (left out)."""
    out: dict[str, list[Trial]] = {}
    for key, column in columns.items():
        if not isinstance(column, dict):
            continue
        flags, scores = column.get("passed"), column.get("score")
        passed: list[bool | None] = [_READ_FLAGS.get(flag) for flag in flags] if isinstance(flags, str) else []
        score: list[object] = list(scores) if isinstance(scores, list) else []
        size = max(len(passed), len(score))
        passed += [None] * (size - len(passed))
        score += [None] * (size - len(score))
        out[str(key)] = [{"passed": p, "score": _unit(s)} for p, s in zip(passed, score)]
    return out


# --- checks -----------------------------------------------------------------------------------


def _fraction(value: object, field: str, low: float, high: float) -> float:
    """``value`` as a float from ``low`` (included) to ``high`` (excluded), or an error naming ``field``."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValueError(f"{field} must be a number")
    if not low <= value < high:
        raise ValueError(f"{field} must be from {low:g} to below {high:g}")
    return float(value)


def check_confidence(confidence: object) -> float:
    return _fraction(confidence, "confidence", 0.5, 1.0)


def check_max_regression(max_regression: object) -> float:
    return _fraction(max_regression, "max_regression", 0.0, 1.0)


def check_max_repeats(max_repeats: object) -> int:
    if isinstance(max_repeats, bool) or not isinstance(max_repeats, int) or not 1 <= max_repeats <= MAX_REPEATS:
        raise ValueError(f"max_repeats must be an integer from 1 to {MAX_REPEATS}")
    return max_repeats


# --- distributions ----------------------------------------------------------------------------


def normal_quantile(p: float) -> float:
    return NormalDist().inv_cdf(p)


def _beta_fraction(a: float, b: float, x: float) -> float:
    """The continued fraction of the incomplete beta function (modified Lentz)."""
    tiny, qab, qap, qam = 1e-300, a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 300):
        for numerator in (m * (b - m) * x / ((qam + 2 * m) * (a + 2 * m)), -(a + m) * (qab + m) * x / ((a + 2 * m) * (qap + 2 * m))):
            d = 1.0 + numerator * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + numerator / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1.0) < 1e-15:
            break
    return h


def _regularised_beta(a: float, b: float, x: float) -> float:
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _beta_fraction(a, b, x) / a
    return 1.0 - front * _beta_fraction(b, a, 1.0 - x) / b


def student_t_cdf(t: float, df: float) -> float:
    tail = 0.5 * _regularised_beta(df / 2.0, 0.5, df / (df + t * t))
    return 1.0 - tail if t >= 0 else tail


@functools.lru_cache(maxsize=4096)
def student_t_quantile(p: float, df: float) -> float:
    """The ``p`` quantile of Student's t with ``df`` degrees of freedom (bisection on the CDF)."""
    if not 0.0 < p < 1.0 or df <= 0:
        raise ValueError("student_t_quantile needs 0 < p < 1 and df > 0")
    if p < 0.5:
        return -student_t_quantile(1.0 - p, df)
    low, high = 0.0, max(1.0, normal_quantile(p))
    while student_t_cdf(high, df) < p:
        low, high = high, high * 2.0
    for _ in range(200):
        middle = (low + high) / 2.0
        if student_t_cdf(middle, df) < p:
            low = middle
        else:
            high = middle
        if high - low < 1e-12 * max(1.0, high):
            break
    return (low + high) / 2.0


# --- estimators -------------------------------------------------------------------------------


def wilson_interval(successes: float, trials: float, confidence: float = DEFAULT_CONFIDENCE) -> tuple[float, float]:
    """Wilson score interval of a proportion (``trials`` may be an effective, fractional count)."""
    check_confidence(confidence)
    if trials <= 0:
        return (0.0, 1.0)
    z = normal_quantile(1.0 - (1.0 - confidence) / 2.0)
    p = min(1.0, max(0.0, successes / trials))
    denominator = 1.0 + z * z / trials
    centre = (p + z * z / (2.0 * trials)) / denominator
    half = z * math.sqrt(p * (1.0 - p) / trials + z * z / (4.0 * trials * trials)) / denominator
    # At 0 and 1 the bounds are exactly 0 and 1 (the formula leaves rounding dust there).
    return (0.0 if p == 0.0 else max(0.0, centre - half), 1.0 if p == 1.0 else min(1.0, centre + half))


def mean_interval_t(values: Sequence[float], confidence: float = DEFAULT_CONFIDENCE) -> tuple[float, float]:
    """Student-t interval of a mean; needs two values."""
    check_confidence(confidence)
    if len(values) < 2:
        raise ValueError("a t interval needs at least two values")
    mean = math.fsum(values) / len(values)
    variance = math.fsum((value - mean) ** 2 for value in values) / (len(values) - 1)
    half = student_t_quantile(1.0 - (1.0 - confidence) / 2.0, len(values) - 1) * math.sqrt(variance / len(values))
    return (mean - half, mean + half)


def _quantile(ordered: Sequence[float], q: float) -> float:
    position = q * (len(ordered) - 1)
    below = math.floor(position)
    above = min(below + 1, len(ordered) - 1)
    return ordered[below] + (ordered[above] - ordered[below]) * (position - below)


def mean_interval_bootstrap(
    values: Sequence[float], confidence: float = DEFAULT_CONFIDENCE, *, resamples: int = BOOTSTRAP_RESAMPLES, seed: int = 0
) -> tuple[float, float]:
    """Percentile bootstrap interval of a mean; the same values and seed give the same interval."""
    check_confidence(confidence)
    if not values:
        raise ValueError("a bootstrap interval needs at least one value")
    rng = random.Random(seed)
    size = len(values)
    means = sorted(math.fsum(rng.choices(values, k=size)) / size for _ in range(resamples))
    alpha = 1.0 - confidence
    return (_quantile(means, alpha / 2.0), _quantile(means, 1.0 - alpha / 2.0))


def _check_counts(n: int, c: int, k: int) -> None:
    if not 0 <= c <= n or not 1 <= k <= n:
        raise ValueError(f"pass@k needs 0 <= c <= n and 1 <= k <= n (got n={n}, c={c}, k={k})")


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased estimate that at least one of ``k`` trials passes, from ``c`` passes in ``n`` (Chen et al. 2021)."""
    _check_counts(n, c, k)
    if n - c < k:
        return 1.0
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def pass_hat_k(n: int, c: int, k: int) -> float:
    """Unbiased estimate that all ``k`` trials pass (pass^k): C(c, k) / C(n, k)."""
    _check_counts(n, c, k)
    return math.comb(c, k) / math.comb(n, k)


# --- one lane ---------------------------------------------------------------------------------


def _case_passes(trials: LaneTrials) -> dict[str, list[bool]]:
    found = {key: [passed for t in case if (passed := t.get("passed")) is not None] for key, case in trials.items()}
    return {key: [bool(p) for p in passes] for key, passes in found.items() if passes}


def _case_scores(trials: LaneTrials) -> dict[str, list[float]]:
    found = {key: [score for t in case if (score := _unit(t.get("score"))) is not None] for key, case in trials.items()}
    return {key: scores for key, scores in found.items() if scores}


def _unit(value: object) -> float | None:
    """A score clamped to [0, 1]; None for a missing or non-finite one (an unscored trial)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return min(1.0, max(0.0, float(value)))


def flaky_cases(trials: LaneTrials) -> list[str]:
    """The cases with mixed outcomes: at least one scored trial passed and one failed."""
    return sorted(key for key, passes in _case_passes(trials).items() if any(passes) and not all(passes))


def _effective_trials(rates: Sequence[float], total: int) -> float:
    """Kish's effective sample size of clustered trials: p(1-p) / (variance of the mean of case rates)."""
    if len(rates) < 2:
        return float(total)
    mean = math.fsum(rates) / len(rates)
    between = math.fsum((rate - mean) ** 2 for rate in rates) / (len(rates) - 1) / len(rates)
    if between <= 0.0:
        return float(total) if 0.0 < mean < 1.0 else float(len(rates))
    return min(float(total), max(1.0, mean * (1.0 - mean) / between))


def lane_statistics(trials: LaneTrials, confidence: float = DEFAULT_CONFIDENCE, *, seed: int = 0) -> LaneStatistics:
    """Pass rate, score, pass@k / pass^k, per-case rates and flaky cases of one lane's trials."""
    check_confidence(confidence)
    passes, scores = _case_passes(trials), _case_scores(trials)
    counts = [len(p) for p in passes.values()]
    fewest = min(counts) if counts else 0
    rates = {key: sum(p) / len(p) for key, p in sorted(passes.items())}
    pass_rate = math.fsum(rates.values()) / len(rates) if rates else None
    case_means = [math.fsum(s) / len(s) for _, s in sorted(scores.items())]
    score = math.fsum(case_means) / len(case_means) if case_means else None
    several = fewest >= 2
    pass_rate_ci = score_ci = None
    if several and pass_rate is not None:
        effective = _effective_trials(list(rates.values()), sum(counts))
        pass_rate_ci = list(wilson_interval(pass_rate * effective, effective, confidence))
    if several and score is not None:
        # Cases are the units (resampled whole); a single case's trials are resampled instead.
        sample = case_means if len(case_means) >= 2 else next(iter(scores.values()))
        score_ci = list(mean_interval_bootstrap(sample, confidence, seed=seed))
    ks = range(1, fewest + 1)
    return {
        "cases": len(passes),
        "trials": fewest,
        "trials_total": sum(counts),
        "confidence": confidence,
        "pass_rate": pass_rate,
        "pass_rate_ci": pass_rate_ci,
        "score": score,
        "score_ci": score_ci,
        "pass_at_k": {str(k): _mean_over_cases(passes, k, pass_at_k) for k in ks},
        "pass_hat_k": {str(k): _mean_over_cases(passes, k, pass_hat_k) for k in ks},
        "case_pass_rates": rates,
        "flaky_cases": flaky_cases(trials),
        "uncertainty": "" if several or not counts else NO_UNCERTAINTY,
    }


def _mean_over_cases(passes: Mapping[str, Sequence[bool]], k: int, estimator: Callable[[int, int, int], float]) -> float:
    values = [estimator(len(p), sum(p), k) for p in passes.values()]
    return math.fsum(values) / len(values)


# --- two lanes --------------------------------------------------------------------------------

_LABELS = {"pass_rate": "pass rate", "score": "score"}


def _metric_values(trials: LaneTrials, metric: Metric) -> dict[str, list[float]]:
    if metric == "pass_rate":
        found = {key: [1.0 if passed else 0.0 for t in case if (passed := t.get("passed")) is not None] for key, case in trials.items()}
        return {key: values for key, values in found.items() if values}
    return _case_scores(trials)


def _check_metric(metric: object) -> Metric:
    if metric == "pass_rate" or metric == "score":
        return metric
    raise ValueError(f"metric must be one of {', '.join(METRICS)}")


class _Pairs(TypedDict):
    keys: list[str]
    candidate: list[list[float]]
    baseline: list[list[float]]
    unpaired: list[str]


def _pairs(candidate: LaneTrials, baseline: LaneTrials, metric: Metric) -> _Pairs:
    ours, theirs = _metric_values(candidate, metric), _metric_values(baseline, metric)
    keys = sorted(set(ours) & set(theirs))
    return {
        "keys": keys,
        "candidate": [ours[key] for key in keys],
        "baseline": [theirs[key] for key in keys],
        "unpaired": sorted((set(candidate) | set(baseline)) - set(keys)),
    }


def _mean(values: Sequence[float]) -> float:
    return math.fsum(values) / len(values)


def _sample_variance(values: Sequence[float]) -> float:
    mean = _mean(values)
    return math.fsum((value - mean) ** 2 for value in values) / (len(values) - 1)


def _decide(low: float, high: float, max_regression: float) -> Decision:
    if high < -max_regression:
        return FAIL
    if low > -max_regression:
        return PASS
    return INSUFFICIENT


def _comparison(pairs: _Pairs, metric: Metric, method: str, max_regression: float, confidence: float) -> PairedComparison:
    fewest = min((min(len(c), len(b)) for c, b in zip(pairs["candidate"], pairs["baseline"])), default=0)
    return {
        "metric": metric,
        "method": method,
        "cases": len(pairs["keys"]),
        "trials_per_case": fewest,
        "candidate": None,
        "baseline": None,
        "difference": None,
        "interval": None,
        "confidence": confidence,
        "max_regression": max_regression,
        "decision": INSUFFICIENT,
        "more_trials_per_case": None,
        "reason": "",
        "unpaired_cases": pairs["unpaired"],
    }


def _settle(result: PairedComparison, difference: float, low: float, high: float, more: int | None) -> PairedComparison:
    """Fill in the estimate, its interval, the decision and the sentence that explains it."""
    m, label = result["max_regression"], _LABELS[result["metric"]]
    decision = _decide(low, high, m)
    result["difference"], result["interval"], result["decision"] = difference, [max(-1.0, low), min(1.0, high)], decision
    result["more_trials_per_case"] = more if decision == INSUFFICIENT else None
    interval = f"{result['confidence'] * 100:g}% interval {low:+.3f} to {high:+.3f}"
    if decision == FAIL:
        result["reason"] = f"the {label} dropped by {-difference:.3f} ({interval}): beyond the tolerated drop of {m:g}"
    elif decision == PASS:
        result["reason"] = f"the {label} changed by {difference:+.3f} ({interval}): no drop beyond the tolerated {m:g}"
    elif more is not None:
        result["reason"] = (
            f"the {interval} of the {label}'s change includes a drop of {m:g}: about {more} more trial(s) per case would likely decide"
        )
    else:
        result["reason"] = (
            f"the {interval} of the {label}'s change includes a drop of {m:g}, and more trials per case alone are unlikely to decide"
        )
    return result


def _trials_needed(needed: float, fewest: int) -> int | None:
    if not math.isfinite(needed) or needed > _MAX_TRIALS_ESTIMATE:
        return None
    return max(1, math.floor(needed) + 1 - fewest)


def paired_comparison(
    candidate: LaneTrials,
    baseline: LaneTrials,
    *,
    metric: Metric = "pass_rate",
    max_regression: float = DEFAULT_MAX_REGRESSION,
    confidence: float = DEFAULT_CONFIDENCE,
) -> PairedComparison:
    """Candidate against baseline on one metric, paired case by case, with a fixed number of trials."""
    m, metric = check_max_regression(max_regression), _check_metric(metric)
    pairs = _pairs(candidate, baseline, metric)
    result = _comparison(pairs, metric, "paired_t", m, check_confidence(confidence))
    n, fewest = result["cases"], result["trials_per_case"]
    if n < 2:
        result["reason"] = "a paired comparison needs at least two cases with scored trials on both sides"
        return result
    differences = [_mean(c) - _mean(b) for c, b in zip(pairs["candidate"], pairs["baseline"])]
    result["candidate"] = _mean([_mean(c) for c in pairs["candidate"]])
    result["baseline"] = _mean([_mean(b) for b in pairs["baseline"]])
    difference = _mean(differences)
    spread = math.fsum((d - difference) ** 2 for d in differences)
    # One pseudo-case of unit per-trial variance: identical, unanimous cases never look certain.
    variance = (spread + 1.0 / fewest) / n
    t = student_t_quantile(1.0 - (1.0 - confidence) / 2.0, n - 1)
    half = t * math.sqrt(variance / n)
    more = _more_trials_fixed(pairs, spread / n, fewest, gap=abs(difference + m) / t)
    return _settle(result, difference, difference - half, difference + half, more)


def _more_trials_fixed(pairs: _Pairs, observed: float, fewest: int, *, gap: float) -> int | None:
    """Trials per case at which the interval would exclude the tolerance, the estimate unchanged.

    The observed variance of a case's difference is split into a within-case part (trial noise,
    which shrinks as 1/trials) and a between-case part (how much the change differs from case to
    case, which no number of trials shrinks)."""
    n = len(pairs["keys"])
    both = [(c, b) for c, b in zip(pairs["candidate"], pairs["baseline"]) if len(c) >= 2 and len(b) >= 2]
    if both:
        per_trial = _mean([_sample_variance(c) + _sample_variance(b) for c, b in both])
        within_now = _mean([_sample_variance(c) / len(c) + _sample_variance(b) / len(b) for c, b in both])
        # Trial noise cannot exceed what the cases' differences show (the sides may move together).
        if within_now > observed:
            per_trial, within_now = per_trial * observed / within_now, observed
    else:
        per_trial, within_now = observed * fewest, observed
    between = max(0.0, observed - within_now)
    per_trial += 1.0 / n  # the pseudo-case, which shrinks with trials like trial noise
    room = n * gap * gap - between
    if room <= 0.0:
        return None
    return _trials_needed(per_trial / room, fewest)


def sequential_comparison(
    candidate: LaneTrials,
    baseline: LaneTrials,
    *,
    metric: Metric = "pass_rate",
    max_regression: float = DEFAULT_MAX_REGRESSION,
    confidence: float = DEFAULT_CONFIDENCE,
) -> PairedComparison:
    """The adaptive version: valid however many rounds were looked at before (see the module doc).

    Trial ``j`` of a case is paired with the other side's trial ``j``; a case whose sides have
    different numbers of scored trials contributes the pairs both have."""
    m, metric = check_max_regression(max_regression), _check_metric(metric)
    if m <= 0.0:
        raise ValueError("max_regression must be greater than 0 for adaptive trials: the test resolves drops of that size")
    pairs = _pairs(candidate, baseline, metric)
    result = _comparison(pairs, metric, "sequential", m, check_confidence(confidence))
    matched = [list(zip(c, b)) for c, b in zip(pairs["candidate"], pairs["baseline"])]
    size = sum(len(case) for case in matched)
    if not size:
        result["reason"] = "no case has scored trials on both sides"
        return result
    ours = sum(x for case in matched for x, _ in case)
    theirs = sum(y for case in matched for _, y in case)
    squares = sum((x - y) ** 2 for case in matched for x, y in case)
    result["candidate"], result["baseline"] = ours / size, theirs / size
    difference = (ours - theirs) / size
    # The variance of one trial difference, plus one pseudo-observation of unit squared deviation.
    variance = (max(0.0, squares - size * difference * difference) + 1.0) / size
    evidence = math.log(2.0 / (1.0 - confidence))  # ln(1/α') with α' = (1 - confidence) / 2
    half = m / 2.0 + evidence * variance / (size * m)
    gap = abs(difference + m) - m / 2.0
    more = None
    if gap > 0.0:
        more = _trials_needed(evidence * variance / (len(matched) * m * gap), result["trials_per_case"])
    return _settle(result, difference, difference - half, difference + half, more)


SETTLE_TRIALS: Final = 6  # trials per side, all identical on both sides, that settle a case (measured: see the module doc)


def _same(trial: Trial, first: Trial) -> bool:
    return trial.get("passed") is not None and trial.get("passed") == first.get("passed") and trial.get("score") == first.get("score")


def settled_cases(candidate: LaneTrials, baseline: LaneTrials) -> set[str]:
    """The cases whose paired outcome is certain: at least :data:`SETTLE_TRIALS` scored trials per
    side, every trial of both sides the same verdict and score (the candidate's trials against the
    baseline's first as many). A settled case needs no more trials (see the module doc)."""
    out: set[str] = set()
    for key, ours in candidate.items():
        theirs = baseline.get(key) or []
        if len(ours) < SETTLE_TRIALS or len(theirs) < len(ours):
            continue
        first = ours[0]
        if all(_same(trial, first) for trial in ours) and all(_same(trial, first) for trial in theirs[: len(ours)]):
            out.add(key)
    return out


def carry_settled(candidate: LaneTrials, baseline: LaneTrials) -> tuple[LaneTrials, LaneTrials]:
    """Both sides with every settled case's trials carried forward to the most trials any case has
    (the baseline's truncated to the candidate's first): the sequential test then weighs every case
    the same, as if it had been topped up (see the module doc)."""
    most = max((len(case) for case in (*candidate.values(), *baseline.values())), default=0)
    settled = settled_cases(candidate, baseline)
    if not settled:
        return candidate, baseline
    ours: dict[str, Sequence[Trial]] = dict(candidate)
    theirs: dict[str, Sequence[Trial]] = dict(baseline)
    for key in settled:
        first = candidate[key][0]
        ours[key] = theirs[key] = [{"passed": first["passed"], "score": first["score"]}] * most
    return ours, theirs


def lane_gate(
    candidate: LaneTrials,
    baseline: LaneTrials,
    *,
    max_regression: float = DEFAULT_MAX_REGRESSION,
    confidence: float = DEFAULT_CONFIDENCE,
    sequential: bool = False,
    metrics: Sequence[Metric] = METRICS,
) -> LaneGate:
    """The gate on every metric both lanes have: ``fail`` if one fails, ``pass`` if all pass.

    The error rate is shared between the metrics (Bonferroni): each is compared at confidence
    ``1 - (1 - confidence) / len(metrics)``, so the gate's own false-fail and false-pass rates stay
    within ``(1 - confidence) / 2`` each."""
    check_confidence(confidence)
    compare = sequential_comparison if sequential else paired_comparison
    if sequential:
        candidate, baseline = carry_settled(candidate, baseline)
    present = [metric for metric in dict.fromkeys(metrics) if _metric_values(candidate, metric) and _metric_values(baseline, metric)]
    if not present:
        return {
            "decision": INSUFFICIENT,
            "reason": "no case has scored trials on both sides",
            "trials_per_case": 0,
            "single_trial": False,
            "comparisons": [],
        }
    each = 1.0 - (1.0 - confidence) / len(present)
    comparisons = [compare(candidate, baseline, metric=metric, max_regression=max_regression, confidence=each) for metric in present]
    decisions = [c["decision"] for c in comparisons]
    decision = FAIL if FAIL in decisions else PASS if all(d == PASS for d in decisions) else INSUFFICIENT
    deciding = [c for c in comparisons if c["decision"] == decision] or comparisons
    fewest = min(c["trials_per_case"] for c in comparisons)
    return {
        "decision": decision,
        "reason": "; ".join(c["reason"] for c in deciding),
        "trials_per_case": fewest,
        "single_trial": fewest == 1,
        "comparisons": comparisons,
    }


def adaptive_plan(decisions: Mapping[str, str], *, trials_done: int, max_repeats: int) -> AdaptivePlan:
    """After a round: which candidate lanes (by their gate's decision so far) get another trial of every case.

    Stops when every comparison is decided or ``trials_done`` reached ``max_repeats``; the
    baseline runs another round while any candidate does."""
    check_max_repeats(max_repeats)
    undecided = sorted(lane for lane, decision in decisions.items() if decision == INSUFFICIENT)
    stop = not undecided or trials_done >= max_repeats
    reason = "decided" if not undecided else "budget_spent" if stop else "undecided"
    return {
        "stop": stop,
        "reason": reason,
        "lanes": [] if stop else undecided,
        "baseline": not stop,
        "trials_done": trials_done,
        "max_repeats": max_repeats,
    }

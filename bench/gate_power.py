"""Gate power bench (not a test): the trial-based release gate's error rates, measured, and the
trials adaptive mode spends against a fixed number of trials per case.

Simulated lanes with known true pass rates, no Django: each case has a difficulty (its baseline
pass probability ``sigmoid(a)``, ``a ~ N(1.0, 1.6²)``, so most cases are easy, some hard, a few
hopeless); the candidate's probabilities are ``sigmoid(a - s)`` with ``s`` solved so that the
candidate's mean true pass rate over the cases is exactly the baseline's minus the scenario's drop:

- ``equal``: the same agent (drop 0): any ``fail`` is a false fail;
- ``regression``: a drop of 0.10, twice the tolerated ``max_regression`` of 0.05: any ``pass`` is
  a false pass;
- ``large``: a drop of 0.30: any ``pass`` is a false pass.

Every trial is a Bernoulli draw. For 20, 50, 100 and 200 cases and many seeds, the product's
release gate decides on the pass rate: the trials go into a comparison summary the way
comparisons/services.py stores them (``trials``, and ``trials_sequential`` for adaptive rounds)
and :func:`engine.scoring.gates.evaluate_gate` reads them with a policy of ``max_regression:
0.05, confidence: 0.95`` — the code path of ``POST …/comparisons/<id>/gate``, not a copy of it.
The simulated trials have no score, so the gate compares the pass rate only (with scores too it
shares its error rate between the two metrics and errs less):

- ``fixed``: ``N`` trials of every case, then the gate; ``N`` is what a fixed design needs to
  decide 90 % of the time when the truth is 0.05 from the tolerance (the ``equal`` and
  ``regression`` scenarios), from the simulated per-trial variance, at most 50;
- ``adaptive``: rounds of one trial of every case not yet settled (:func:`engine.scoring.stats.settled_cases`:
  the same outcome in every trial on both sides), the gate (sequential, settled cases carried
  forward) and :func:`engine.scoring.stats.adaptive_plan` after each, at most ``2N`` trials (at
  most 50), stopping when decided; its trials per case are the mean over the cases;
- ``peeking`` (calibration only): the fixed gate looked at after every round, stopping when it
  decides, which is what the sequential test exists to avoid.

A fourth scenario, ``boundary`` (a drop of exactly the tolerance, where any verdict is wrong and
each side's error may reach 2.5 %), checks the error rates where they are tightest.

It prints, per case count and scenario, the share of seeds that decided right, decided wrong and
did not decide, and the mean trials per case; then the false-fail rate on equal agents, the
false-pass rate on the regressions and the error at the tolerance (with the Wilson interval of
each measured rate), how often each mode decided right, and the trials adaptive mode spent over
fixed-N on the three main scenarios. Exit status 1 unless: false fail ≤ 5 % and false pass ≤
5 % in both modes, and adaptive spends at least 40 % fewer trials. It also prints how many trials
the alternative anytime-valid choice, a normal-mixture (Robbins) confidence sequence, would need
to resolve a drop of the tolerance, relative to the sequential tests used.

Run: .venv/bin/python bench/gate_power.py [--seeds 300] [--cases 20 50 100 200] [--jobs 4]
"""

from __future__ import annotations

import argparse
import math
import os
import random
import sys
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from typing import cast

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from engine.scoring import gates, stats  # noqa: E402
from engine.scoring.documents import ComparisonSummary  # noqa: E402

MAX_REGRESSION = 0.05
CONFIDENCE = 0.95
POWER = 0.90  # the fixed design's target share of decisions at 0.05 from the tolerance
SCENARIOS = {"equal": 0.0, "regression": 0.10, "large": 0.30, "boundary": 0.05}
WRONG = {"equal": {stats.FAIL}, "regression": {stats.PASS}, "large": {stats.PASS}, "boundary": {stats.PASS, stats.FAIL}}
RIGHT = {"equal": stats.PASS, "regression": stats.FAIL, "large": stats.FAIL, "boundary": stats.INSUFFICIENT}
MAIN = ("equal", "regression", "large")  # the Done-when scenarios; "boundary" calibrates
DIFFICULTY = (1.0, 1.6)  # mean and sd of a case's baseline logit
POLICY = {"max_regression": MAX_REGRESSION, "confidence": CONFIDENCE}


def sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x))


def lanes(rng: random.Random, cases: int, drop: float) -> tuple[list[float], list[float]]:
    """True per-case pass probabilities of the baseline and the candidate (mean lower by ``drop``)."""
    logits = [rng.gauss(*DIFFICULTY) for _ in range(cases)]
    baseline = [sigmoid(a) for a in logits]
    if drop == 0.0:
        return baseline, list(baseline)
    target = sum(baseline) / cases - drop
    low, high = 0.0, 30.0
    for _ in range(60):
        shift = (low + high) / 2
        if sum(sigmoid(a - shift) for a in logits) / cases > target:
            low = shift
        else:
            high = shift
    return baseline, [sigmoid(a - (low + high) / 2) for a in logits]


def draw(rng: random.Random, probabilities: Sequence[float], trials: int, into: dict[str, list[stats.Trial]]) -> None:
    for i, p in enumerate(probabilities):
        into.setdefault(f"c{i}", []).extend({"passed": rng.random() < p, "score": None} for _ in range(trials))


def gate(candidate: stats.LaneTrials, baseline: stats.LaneTrials, *, sequential: bool) -> str:
    """The product's release gate on the two lanes' trials (a comparison summary as comparisons/services.py stores it)."""
    summary: dict[str, object] = {
        "status": "comparable",
        "dimension_deltas": {},
        "trials": {"baseline": stats.trials_to_columns(baseline), "candidate": stats.trials_to_columns(candidate)},
    }
    if sequential:
        summary["trials_sequential"] = True
    return gates.evaluate_gate(cast(ComparisonSummary, summary), POLICY)["verdict"]


def fixed(rng: random.Random, base: list[float], cand: list[float], repeats: int) -> tuple[str, float]:
    baseline: dict[str, list[stats.Trial]] = {}
    candidate: dict[str, list[stats.Trial]] = {}
    draw(rng, base, repeats, baseline)
    draw(rng, cand, repeats, candidate)
    return gate(candidate, baseline, sequential=False), repeats


def rounds(rng: random.Random, base: list[float], cand: list[float], budget: int, *, sequential: bool) -> tuple[str, float]:
    """Two trials of every case first, then one per round, the gate after each, stopping when it decides.

    Two first, as an adaptive run's first round (``runs.models.DEFAULT_AUTO_FIRST_ROUND``): with one
    trial per case the gate keeps the rules for one trial. ``sequential``: the anytime-valid
    comparison and the stop rule (adaptive mode); otherwise the fixed interval looked at after
    every round ("peeking"), which inflates the error rate."""
    baseline: dict[str, list[stats.Trial]] = {}
    candidate: dict[str, list[stats.Trial]] = {}
    done = spent = 0
    settled: set[str] = set()
    while True:
        for i, (p, q) in enumerate(zip(base, cand)):
            key = f"c{i}"
            if key not in settled:
                baseline.setdefault(key, []).append({"passed": rng.random() < p, "score": None})
                candidate.setdefault(key, []).append({"passed": rng.random() < q, "score": None})
                spent += 1
        done += 1
        if done < 2:
            continue
        decision = gate(candidate, baseline, sequential=sequential)
        if stats.adaptive_plan({"candidate": decision}, trials_done=done, max_repeats=budget)["stop"]:
            return decision, spent / len(base)
        if sequential:  # adaptive mode tops up only the cases whose paired outcome is still uncertain
            settled = stats.settled_cases(candidate, baseline)


def per_trial_variance(drop: float, samples: int = 20_000) -> float:
    """The mean variance of one paired trial difference, p(1-p) + p'(1-p'), in a scenario."""
    base, cand = lanes(random.Random(7), samples, drop)
    return sum(p * (1 - p) + q * (1 - q) for p, q in zip(base, cand)) / samples


def fixed_repeats(cases: int, variance: float) -> int:
    """Trials per case a fixed design needs to decide POWER of the time 0.05 from the tolerance."""
    t = stats.student_t_quantile(1 - (1 - CONFIDENCE) / 2, cases - 1)
    z = stats.normal_quantile(POWER)
    return max(2, min(stats.MAX_REPEATS, math.ceil(((t + z) / MAX_REGRESSION) ** 2 * variance / cases)))


@dataclass
class Tally:
    right: int = 0
    wrong: int = 0
    undecided: int = 0
    trials: float = 0.0
    seeds: int = 0
    cpu: float = 0.0

    def add(self, scenario: str, decision: str, trials: float) -> None:
        self.seeds += 1
        self.trials += trials
        if decision in WRONG[scenario]:
            self.wrong += 1
        elif decision == RIGHT[scenario]:
            self.right += 1
        else:
            self.undecided += 1


def simulate(job: tuple[int, str, str, int, int, int]) -> tuple[int, str, str, Tally]:
    cases, scenario, mode, budget, first_seed, seeds = job
    tally = Tally(cpu=-time.process_time())
    for seed in range(first_seed, first_seed + seeds):
        base, cand = lanes(random.Random(f"{cases}:{scenario}:{seed}"), cases, SCENARIOS[scenario])
        rng = random.Random(f"{cases}:{scenario}:{mode}:{seed}")
        if mode == "fixed":
            decision, trials = fixed(rng, base, cand, budget)
        else:
            decision, trials = rounds(rng, base, cand, budget, sequential=mode == "adaptive")
        tally.add(scenario, decision, trials)
    tally.cpu += time.process_time()
    return cases, scenario, mode, tally


def mixture_ratio(confidence: float) -> float:
    """Trials a normal-mixture confidence sequence (tuned at its crossing) needs to resolve a drop of
    the tolerance, over what the pair of sequential tests needs (same overall error rate)."""
    alpha = 1 - confidence
    c = -2 * math.log(alpha) + math.log(-2 * math.log(alpha) + 1)
    mixture = 2 * (c + 1) / c * math.log(math.sqrt(c + 1) / alpha)  # N·m²/σ² at half-width m
    sprt = 2 * math.log(2 / alpha)  # N·m²/σ² at half-width m: m/2 + L·σ²/(N·m) = m
    return mixture / sprt


def rate(count: int, total: int) -> str:
    low, high = stats.wilson_interval(count, total, 0.95)
    return f"{count / total:6.1%} [{low:.1%}, {high:.1%}]"


def plan(cases: Sequence[int], seeds: int, jobs: int, repeats: dict[int, int]) -> list[tuple[int, str, str, int, int, int]]:
    """The simulation jobs: every case count × scenario × mode, the seeds split in chunks."""
    chunk = max(1, math.ceil(seeds / max(1, jobs)))
    return [
        (n, scenario, mode, repeats[n] if mode == "fixed" else adaptive_budget(repeats[n]), first, min(chunk, seeds - first))
        for n in cases
        for scenario in SCENARIOS
        for mode in ("fixed", "adaptive", "peeking")
        # Peeking only shows what the sequential test avoids: at the tolerance, fewest and most cases.
        if mode != "peeking" or (scenario == "boundary" and n in (min(cases), max(cases)))
        for first in range(0, seeds, chunk)
    ]


def adaptive_budget(repeats: int) -> int:
    """Adaptive mode may run up to twice fixed-N's trials (at most 50), and stops when decided."""
    return min(stats.MAX_REPEATS, 2 * repeats)


def report(tallies: dict[tuple[int, str, str], Tally], cases: Sequence[int], repeats: dict[int, int]) -> bool:
    print(f"{'cases':>5} {'N':>3} {'max':>3} {'scenario':<10} {'mode':<8} {'right':>7} {'wrong':>7} {'undecided':>9} {'trials/case':>11}")
    for (n, scenario, mode), t in sorted(tallies.items(), key=lambda item: (item[0][0], list(SCENARIOS).index(item[0][1]))):
        budget = repeats[n] if mode == "fixed" else adaptive_budget(repeats[n])
        print(
            f"{n:>5} {repeats[n]:>3} {budget:>3} {scenario:<10} {mode:<8} {t.right / t.seeds:>7.1%} {t.wrong / t.seeds:>7.1%} "
            f"{t.undecided / t.seeds:>9.1%} {t.trials / t.seeds:>11.2f}"
        )

    def total(scenario: str, mode: str, name: str) -> float:
        return sum(getattr(tallies[(n, scenario, mode)], name) for n in cases if (n, scenario, mode) in tallies)

    ok = True
    print()
    errors = (
        ("equal", "false fail, equal agents"),
        ("regression", "false pass, drop 0.10 (2× tolerance)"),
        ("large", "false pass, drop 0.30"),
        ("boundary", "any decision, drop = tolerance"),
    )
    for mode in ("fixed", "adaptive", "peeking"):
        for scenario, what in errors:
            if total(scenario, mode, "seeds"):
                wrong, seeds = int(total(scenario, mode, "wrong")), int(total(scenario, mode, "seeds"))
                ok &= scenario == "boundary" or mode == "peeking" or wrong / seeds <= 0.05
                print(f"{mode:<8} {what:<38} {rate(wrong, seeds)}")
    print()
    spent = {mode: sum(total(s, mode, "trials") for s in MAIN) for mode in ("fixed", "adaptive")}
    for mode in ("fixed", "adaptive"):
        right, seeds = int(sum(total(s, mode, "right") for s in MAIN)), int(sum(total(s, mode, "seeds") for s in MAIN))
        print(f"{mode:<8} decided right {right / seeds:.1%} of the {seeds} lanes of equal, regression and large")
    for scenario in MAIN:
        print(f"trials adaptive/fixed, {scenario:<10} {total(scenario, 'adaptive', 'trials') / total(scenario, 'fixed', 'trials'):.2f}")
    ratio = spent["adaptive"] / spent["fixed"]
    ok &= ratio <= 0.60
    print(f"trials adaptive/fixed, all        {ratio:.2f}  ({1 - ratio:.0%} fewer)")
    print(f"a normal-mixture confidence sequence would need {mixture_ratio(CONFIDENCE):.2f}× the trials to resolve a drop of the tolerance")
    return ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--seeds", type=int, default=200)
    parser.add_argument("--cases", type=int, nargs="+", default=[20, 50, 100, 200])
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    args = parser.parse_args()
    started = time.perf_counter()
    variance = max(per_trial_variance(SCENARIOS["equal"]), per_trial_variance(SCENARIOS["regression"]))
    repeats = {n: fixed_repeats(n, variance) for n in args.cases}
    tallies: dict[tuple[int, str, str], Tally] = {}
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        for n, scenario, mode, part in pool.map(simulate, plan(args.cases, args.seeds, args.jobs, repeats)):
            whole = tallies.setdefault((n, scenario, mode), Tally())
            for name in ("right", "wrong", "undecided", "trials", "seeds", "cpu"):
                setattr(whole, name, getattr(whole, name) + getattr(part, name))
    print(f"max_regression {MAX_REGRESSION}, confidence {CONFIDENCE}, {args.seeds} seeds per row; per-trial variance {variance:.3f}")
    ok = report(tallies, args.cases, repeats)
    cpu = sum(t.cpu for t in tallies.values())
    verdict = "OK" if ok else "NOT MET"
    print(
        f"{verdict}: false fail and false pass ≤ 5 %, adaptive ≥ 40 % fewer trials ({time.perf_counter() - started:.0f} s, {cpu:.0f} CPU s)"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

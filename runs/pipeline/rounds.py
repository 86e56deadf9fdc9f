"""Adaptive trials: after each round, another trial of every case only where the comparison is undecided.

A run with ``repeats: "auto"`` starts with ``Run.repeats`` trials of every case in every lane
(2, or ``max_repeats`` if smaller). The first lane (``lane_index`` 0) is the baseline; every other
lane is a candidate compared with it. When a lane's cases of the round are all finished and scored,
the lane waits in ``evaluating`` and enqueues ``runs.run_round_advance``; the call that finds every
open lane waiting decides the round:

- each candidate's gate is read with the *sequential* test of ``engine.scoring.stats.lane_gate``
  (``sequential=True``: valid however many rounds were looked at before, docs/scorecards-and-gates.md
  "Adaptive trials"), at the run's own tolerance and confidence (``Run.round_max_regression``,
  ``Run.round_confidence``: 0.05 and 0.95 unless the run was created with others);
- ``engine.scoring.stats.adaptive_plan`` says whether to stop (every comparison decided, or
  ``max_repeats`` trials spent) and which candidate lanes, with the baseline, get another round;
- those lanes get trial ``n + 1`` of every case whose paired outcome is still uncertain (not
  ``engine.scoring.stats.settled_cases``: a case with the same verdict and score in every trial on
  both sides stops, and the test carries it forward) and go back to ``executing``; the baseline
  gets trial ``n + 1`` of every case one of those candidates does; the others (decided) get their
  scorecard and finish. Every round's decisions are appended to ``Run.round_log``.

Safe to repeat: the round is claimed by a compare-and-set on ``Run.rounds`` and the row's
``updated_at``, new case runs are
unique per (lane, case, trial), and a call that finds a lane still executing does nothing.
"""

from __future__ import annotations

import logging
from typing import Any

from django.db import transaction
from django.utils import timezone

from engine.scoring import stats
from runs.lifecycle import lane_transition
from runs.models import LANE_TERMINAL, CaseRun, Lane, LaneStatus, Run, RunStatus
from runs.pipeline.advance import lane_complete, lane_counts, lanes_dispatch_interleaved
from scoring.selectors import lane_trials

logger = logging.getLogger(__name__)

WAITING, SETTLED, NEXT_ROUND, STOPPED = "waiting", "settled", "next_round", "stopped"


def _ready(lanes: list[Lane]) -> bool:
    """Every open lane waits in ``evaluating`` with all its cases finished and scored."""
    for lane in lanes:
        if lane.status != LaneStatus.EVALUATING:
            return False
        counts = lane_counts(lane.pk)
        if counts["open"] or counts["unscored"]:
            return False
    return True


def run_round_advance(*, run_id: int) -> str:
    """Decide an adaptive run's round once every open lane finished it (see the module doc).

    Returns what it did: ``waiting`` (a lane is still in its round, or the run is not running),
    ``settled`` (a finished round's lanes completed again after an interruption), ``next_round``
    or ``stopped``."""
    finish: list[int] = []
    extend: list[int] = []
    with transaction.atomic():
        run = Run.objects.select_for_update().filter(pk=run_id).first()
        if run is None or run.status != RunStatus.RUNNING or not run.is_adaptive:
            return WAITING
        lanes = list(Lane.objects.filter(run_id=run_id).order_by("lane_index"))
        open_lanes = [lane for lane in lanes if lane.status not in LANE_TERMINAL]
        if not open_lanes or not _ready(open_lanes):
            return WAITING
        log: list[dict[str, Any]] = list(run.round_log) if isinstance(run.round_log, list) else []
        if log and log[-1].get("stop") and log[-1].get("round") == run.rounds:
            # The decision was taken and recorded; its lanes did not all finish (an interrupted
            # worker): finish them now, without deciding again.
            finish = [lane.pk for lane in open_lanes]
            outcome = SETTLED
        else:
            entry, extend, finish, cases = _decide(run, lanes, open_lanes)
            next_rounds = run.rounds + (1 if extend else 0)
            # Compare and set on the round and the row's last change: of two calls that read the same
            # round (even a last one, which does not move ``rounds``), one records it.
            claimed = Run.objects.filter(pk=run_id, rounds=run.rounds, updated_at=run.updated_at).update(
                rounds=next_rounds, round_log=[*log, entry], updated_at=timezone.now()
            )
            if claimed != 1:
                return WAITING  # another call took this round
            if extend:
                _add_trial(run, [lane for lane in lanes if lane.pk in extend], cases, trial=int(entry["trials"]) + 1, round_=next_rounds)
            outcome = NEXT_ROUND if extend else STOPPED
    for lane_id in finish:
        lane_complete(lane_id=lane_id, run_id=run_id)
    if extend:
        lanes_dispatch_interleaved(lane_ids=extend)
    return outcome


def _decide(run: Run, lanes: list[Lane], open_lanes: list[Lane]) -> tuple[dict[str, Any], list[int], list[int], dict[int, set[str]]]:
    """The round's entry for ``Run.round_log``, the lanes that get another trial, the lanes that
    finish, and the cases (keys) each extended lane tops up."""
    baseline = lanes[0]
    candidates = [lane for lane in open_lanes if lane.pk != baseline.pk]
    trials_done = baseline.trials
    entry: dict[str, Any] = {"round": run.rounds, "trials": trials_done, "baseline": baseline.label, "decisions": {}}
    if baseline.status in LANE_TERMINAL or not candidates:
        # Nothing left to compare: the baseline failed or was cancelled, or every candidate did.
        entry.update(stop=True, reason="no_comparison", lanes=[])
        return entry, [], [lane.pk for lane in open_lanes], {}
    trials = lane_trials(lane_ids=[lane.pk for lane in open_lanes])
    decisions: dict[str, str] = {}
    open_cases: dict[int, set[str]] = {}
    base_trials = trials.get(baseline.pk, {})
    for lane in candidates:
        ours = trials.get(lane.pk, {})
        gate = stats.lane_gate(ours, base_trials, max_regression=run.round_max_regression, confidence=run.round_confidence, sequential=True)
        decisions[str(lane.pk)] = gate["decision"]
        settled = stats.settled_cases(ours, base_trials)
        open_cases[lane.pk] = set(ours) - settled
        entry["decisions"][lane.label] = {
            "decision": gate["decision"],
            "reason": gate["reason"][:500],
            "trials": lane.trials,
            "settled_cases": len(settled),
        }
    plan = stats.adaptive_plan(decisions, trials_done=trials_done, max_repeats=int(run.max_repeats or stats.MAX_REPEATS))
    # An undecided candidate whose every case is settled would get no trial: more rounds cannot move it.
    extend = [int(pk) for pk in plan["lanes"] if open_cases.get(int(pk))]
    if plan["lanes"] and not extend:
        plan = {**plan, "stop": True, "reason": "settled", "lanes": [], "baseline": False}
    if extend and plan["baseline"]:
        extend.insert(0, baseline.pk)
    cases = {pk: open_cases[pk] for pk in extend if pk in open_cases}
    if extend and plan["baseline"]:
        cases[baseline.pk] = set().union(*cases.values()) if cases else set()
    labels = {lane.pk: lane.label for lane in lanes}
    entry.update(stop=plan["stop"], reason=plan["reason"], lanes=[labels[pk] for pk in extend])
    if extend:
        entry["cases"] = {labels[pk]: len(keys) for pk, keys in cases.items()}
    return entry, extend, [lane.pk for lane in open_lanes if lane.pk not in extend], cases


def _add_trial(run: Run, lanes: list[Lane], cases: dict[int, set[str]], *, trial: int, round_: int) -> None:
    """Trial ``trial`` of each lane's cases in ``cases`` (copied from trial 1), and the lanes back to executing."""
    ids = [lane.pk for lane in lanes]
    firsts = [
        row
        for row in CaseRun.objects.filter(lane_id__in=ids, trial=1).values_list(
            "lane_id", "case_id", "case_key", "position", "regression_case_id"
        )
        if row[2] in cases.get(row[0], ())
    ]
    CaseRun.objects.bulk_create(
        [
            CaseRun(
                run_id=run.pk,
                lane_id=lane_id,
                case_id=case_id,
                case_key=case_key,
                position=position,
                regression_case_id=regression_case_id,
                trial=trial,
            )
            for lane_id, case_id, case_key, position, regression_case_id in firsts
        ],
        batch_size=1000,
        ignore_conflicts=True,  # unique per (lane, case, trial): a repeat adds nothing
    )
    Lane.objects.filter(pk__in=ids, trials__lt=trial).update(trials=trial)
    for lane in lanes:
        lane_transition(
            lane_id=lane.pk,
            to=LaneStatus.EXECUTING,
            expected=LaneStatus.EVALUATING,
            reason=f"adaptive round {round_}: trial {trial} of {len(cases.get(lane.pk, ()))} case(s) (the comparison is undecided)",
        )

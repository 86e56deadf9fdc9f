"""Trial statistics of a 500-case × 10-trial lane (not a test): what they cost to compute and to read.

    .venv/bin/python bench/scorecard_statistics.py [--cases 500] [--trials 10] [--repeat 7]

A lane of ``--cases`` cases × ``--trials`` trials (case runs bulk-created with a known pass
probability per case, then ``scoring.services.lane_score``), measured in CPU time (user + sys of
this process), medians of ``--repeat`` interleaved rounds:

- ``compute``: what ``lane_score`` adds to a lane's scoring — the one query for every trial
  (``scoring.selectors.lane_trials``) and ``engine.scoring.stats.lane_statistics`` (Wilson
  interval, 2 000-resample bootstrap, pass@k / pass^k, flaky cases). It is also what a scorecard
  stored before the statistics were costs on read (``scoring.statistics.statistics_by_lane``);
- ``read``: what a page or the API pays for a scored lane: the statistics as stored with the
  scorecard (one query for the document);
- ``gate``: the release gate on two such lanes (``engine.scoring.gates.evaluate_gate`` reading the
  trials a comparison stores), with the size of those stored trials;
- the baseline: ``compute`` on the same cases with one trial each (a lane before trials), so the
  ratio is what ten trials cost over one.

Target: ``compute``, ``read`` and ``gate`` well under 300 ms at 500 × 10. It also prints the query count of
each path, which does not grow with the trials.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import statistics as stat
import sys
from collections.abc import Callable
from pathlib import Path
from typing import cast

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from bench.scratch_django import django_setup  # noqa: E402

django_setup()

from django.core.management import call_command  # noqa: E402
from django.db import connection  # noqa: E402
from django.test.utils import CaptureQueriesContext  # noqa: E402

TARGET_MS = 300.0


def cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def lane_with_trials(cases: int, trials: int, seed: int) -> int:
    """A scored lane of ``cases`` × ``trials`` case runs; returns its id."""
    from runs.models import CaseRun, Lane, Run, ScoreStatus
    from scoring import services as scoring
    from scoring.tests.factories import make_pack_version
    from workspaces.models import Workspace

    workspace = Workspace.objects.create(slug=f"bench-{seed}-{trials}", name="Bench")
    version = make_pack_version(workspace, answers={f"c{i}": str(i) for i in range(cases)})
    input_set = version.input_sets.get()
    run = Run.objects.create(workspace=workspace, pack_version=version, input_set=input_set, name="bench", status="completed")
    snapshot = {"deployment": {"name": "bench", "model": "scripted-1"}, "provider_account": {"provider_key": "scripted"}}
    lane = Lane.objects.create(
        run=run, workspace=workspace, lane_index=0, label="bench", status="completed", trials=trials, snapshot=snapshot
    )
    rng = random.Random(seed)
    rows = []
    for position, case in enumerate(input_set.cases.order_by("position")):
        p = rng.random()
        for trial in range(1, trials + 1):
            passed = rng.random() < p
            rows.append(
                CaseRun(
                    run=run,
                    lane=lane,
                    case=case,
                    case_key=case.case_key,
                    position=position,
                    trial=trial,
                    status="completed",
                    score_status=ScoreStatus.SCORED,
                    passed=passed,
                    score=rng.uniform(0.6, 1.0) if passed else rng.uniform(0.0, 0.5),
                )
            )
    CaseRun.objects.bulk_create(rows, batch_size=1000)
    scoring.lane_score(lane_id=lane.pk)
    return lane.pk


def measure(action: Callable[[], object]) -> tuple[float, int]:
    """CPU milliseconds and statements of one call."""
    with CaptureQueriesContext(connection) as queries:
        started = cpu()
        action()
        spent = cpu() - started
    return spent * 1000, len(queries)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", type=int, default=500)
    parser.add_argument("--trials", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    call_command("migrate", verbosity=0)

    from engine.scoring.documents import ComparisonSummary
    from engine.scoring.gates import evaluate_gate
    from engine.scoring.stats import lane_statistics, trials_to_columns
    from scoring.models import LaneScorecard
    from scoring.selectors import lane_trials
    from scoring.statistics import statistics_by_lane

    many = lane_with_trials(args.cases, args.trials, seed=1)
    one = lane_with_trials(args.cases, 1, seed=1)

    def compute(lane_id: int) -> Callable[[], object]:
        return lambda: lane_statistics(lane_trials(lane_ids=[lane_id])[lane_id])

    def read(lane_id: int) -> Callable[[], object]:
        return lambda: statistics_by_lane({lane_id: LaneScorecard.objects.only("document").get(lane_id=lane_id).document})

    other = lane_with_trials(args.cases, args.trials, seed=2)
    both = lane_trials(lane_ids=[many, other])
    summary = {
        "status": "comparable",
        "dimension_deltas": {},
        "trials": {"baseline": trials_to_columns(both[many]), "candidate": trials_to_columns(both[other])},
    }
    stored_kb = len(json.dumps(summary["trials"])) / 1024

    def gate() -> object:
        return evaluate_gate(cast(ComparisonSummary, summary))

    samples: dict[str, list[tuple[float, int]]] = {"compute": [], "read": [], "gate": [], "baseline": []}
    for _ in range(args.repeat):  # interleaved, so load on the machine hits them all alike
        samples["compute"].append(measure(compute(many)))
        samples["read"].append(measure(read(many)))
        samples["gate"].append(measure(gate))
        samples["baseline"].append(measure(compute(one)))
    medians = {name: stat.median(ms for ms, _ in rows) for name, rows in samples.items()}
    queries = {name: max(q for _, q in rows) for name, rows in samples.items()}
    print(f"lane of {args.cases} cases; CPU ms, median of {args.repeat} interleaved rounds (load average {os.getloadavg()[0]:.1f})")
    print(f"{'':44} {'CPU ms':>8} {'queries':>8}")
    print(f"{f'compute, {args.trials} trials per case':44} {medians['compute']:8.1f} {queries['compute']:8d}")
    print(f"{f'read (stored), {args.trials} trials per case':44} {medians['read']:8.1f} {queries['read']:8d}")
    print(f"{'gate on two such lanes':44} {medians['gate']:8.1f} {queries['gate']:8d}   (their stored trials: {stored_kb:.0f} KB of JSON)")
    print(f"{'baseline: compute, 1 trial per case':44} {medians['baseline']:8.1f} {queries['baseline']:8d}")
    print(f"ratio compute {args.trials} trials / 1 trial: {medians['compute'] / max(medians['baseline'], 1e-9):.2f}")
    ok = medians["compute"] < TARGET_MS and medians["read"] < TARGET_MS and medians["gate"] < TARGET_MS
    print(f"{'OK' if ok else 'NOT MET'}: compute, read and gate under {TARGET_MS:.0f} ms")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

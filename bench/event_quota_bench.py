"""CPU a native case pays for its stored-event byte budgets (EVENT_BYTES_PER_*, docs/operations.md, Quotas).

    .venv/bin/python bench/event_quota_bench.py [--variant read] [--cases 10] [--rounds 5] [--flush-every-event]

Runs cases of a ``bench/throughput_packs.py`` variant in this process (no Celery, scored inline,
as ``bench/profile_case.py`` does), alternating rounds without the quota (the sink as it was: no
counting, the baseline) and with it (the default budgets: a count and a check per batch), so
both see the same machine load. ``--flush-every-event`` sets ``RUNS_EVENT_FLUSH_SECONDS`` to 0,
every event its own batch: the worst case for the per-batch check (by default a quick case's
events go out in one batch with its finish, which writes the count with the case's row).
Prints the median CPU per case (process and sandbox children, user + sys) of each and their
ratio; a measurement: it always exits 0.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from bench.scratch_django import django_setup  # noqa: E402

django_setup()

from django.db import connection  # noqa: E402


def _cpu() -> float:
    """CPU seconds (user + sys) of this process and its reaped children (the sandbox), at µs resolution."""
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


class _NoQuota:
    @staticmethod
    def from_settings() -> None:
        return None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--variant", default="read")
    parser.add_argument("--cases", type=int, default=10, help="cases per round")
    parser.add_argument("--rounds", type=int, default=5, help="rounds of each (alternating)")
    parser.add_argument("--flush-every-event", action="store_true")
    args = parser.parse_args()

    from django.conf import settings

    from bench.throughput_packs import SCRIPTS, captured_run
    from runs import pipeline
    from runs.events import EventQuota
    from runs.pipeline import execute

    if args.flush_every_event:
        settings.RUNS_EVENT_FLUSH_SECONDS = 0
    total = 1 + 2 * args.rounds * args.cases
    per_case: dict[str, list[float]] = {"baseline": [], "quota": []}
    with captured_run(args.variant, SCRIPTS[args.variant], cases=total, max_in_flight=total + 1) as captured:
        ids: list[int] = []

        def next_case() -> int:  # the lane dispatches more as cases finish (its in-flight ceiling)
            ids.extend(int(item[1][0]) for item in captured if item[0] == "runs.case_run_execute")
            captured.clear()
            return ids.pop(0)

        assert pipeline.case_run_execute(case_run_id=next_case(), score_inline=True) == "completed"  # warms the caches
        for _ in range(args.rounds):
            for mode in ("baseline", "quota"):
                setattr(execute, "EventQuota", _NoQuota if mode == "baseline" else EventQuota)  # noqa: B010 - the baseline sink
                cpu = 0.0
                for _ in range(args.cases):
                    pk = next_case()
                    before = _cpu()
                    result = pipeline.case_run_execute(case_run_id=pk, score_inline=True)
                    cpu += _cpu() - before
                    assert result == "completed", result
                per_case[mode].append(cpu * 1000 / args.cases)
        setattr(execute, "EventQuota", EventQuota)  # noqa: B010
    base, quota = statistics.median(per_case["baseline"]), statistics.median(per_case["quota"])
    load = os.getloadavg()[0]
    flush = "every event its own batch" if args.flush_every_event else f"flush every {settings.RUNS_EVENT_FLUSH_SECONDS:g}s"
    print(f"{args.variant} on {connection.vendor}, {flush}, {args.rounds} rounds x {args.cases} cases, load {load:.2f}")
    print(f"baseline (no quota): median CPU per case {base:.2f} ms  (rounds: {', '.join(f'{v:.2f}' for v in per_case['baseline'])})")
    print(f"quota (defaults):    median CPU per case {quota:.2f} ms  (rounds: {', '.join(f'{v:.2f}' for v in per_case['quota'])})")
    print(f"EVENT QUOTA ratio quota/baseline: {quota / base:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""CPU of ``case_run_execute`` (scored inline, as the worker runs it) in this process, optionally profiled.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/agentclash_bench \\
    .venv/bin/python bench/profile_case.py --variant read --cases 100 [--profile 30]

Runs a pack of ``--cases`` cases of a ``bench/throughput_packs.py`` variant one after the other in
this process (no Celery: the dispatcher's tasks are captured and run here), and prints the
process CPU per case (sandbox children included) after a warm-up case. ``--profile N`` prints the
N functions with the most cumulative CPU time under ``cProfile`` (its overhead included).
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from bench.scratch_django import django_setup  # noqa: E402

django_setup()

from django.db import connection  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--variant", default="read")
    parser.add_argument("--cases", type=int, default=100)
    parser.add_argument("--profile", type=int, default=0, help="print this many functions by cumulative time")
    parser.add_argument("--wall", action="store_true", help="profile wall-clock time instead of CPU time")
    parser.add_argument("--sort", default="cumulative", help="pstats sort key (cumulative, tottime, …)")
    parser.add_argument("--callers", action="append", default=[], help="also print who calls functions matching this (repeatable)")
    args = parser.parse_args()

    from bench.throughput_packs import SCRIPTS, captured_run
    from runs import pipeline

    with captured_run(args.variant, SCRIPTS[args.variant], cases=args.cases + 1, max_in_flight=1000) as captured:
        ids = [int(item[1][0]) for item in captured if item[0] == "runs.case_run_execute"]
        captured.clear()
        assert pipeline.case_run_execute(case_run_id=ids[0], score_inline=True) == "completed"  # warms the caches
        profiler = (cProfile.Profile(time.perf_counter) if args.wall else cProfile.Profile(time.process_time)) if args.profile else None
        before, started = os.times(), time.perf_counter()
        if profiler:
            profiler.enable()
        results = [pipeline.case_run_execute(case_run_id=pk, score_inline=True) for pk in ids[1:]]
        if profiler:
            profiler.disable()
        after, wall = os.times(), time.perf_counter() - started
    done = len(results)
    cpu = (sum(after[:4]) - sum(before[:4])) * 1000 / done
    own = (sum(after[:2]) - sum(before[:2])) * 1000 / done
    print(f"{args.variant} on {connection.vendor}: {done} cases, {results.count('completed')} completed; "
          f"CPU per case {cpu:.2f} ms ({own:.2f} ms this process, {cpu - own:.2f} ms its children), "
          f"wall per case {wall * 1000 / done:.2f} ms")  # fmt: skip
    if profiler:
        stats = pstats.Stats(profiler).sort_stats(args.sort)
        stats.print_stats(args.profile)
        for pattern in args.callers:
            stats.print_callers(pattern)
    return 0 if results.count("completed") == done else 1


if __name__ == "__main__":
    sys.exit(main())

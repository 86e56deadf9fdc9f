"""Database statements per case of a run (not a test): prints the counts and their ratio to the ceilings.

    .venv/bin/python bench/run_statements.py [--sql]
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/agentclash_bench .venv/bin/python bench/run_statements.py

One case of a native pack with five tool calls, run in-process (tasks captured, not sent to a
broker), measured three ways: ``case_run_execute`` followed by the separate ``case_run_finalize``
task, and ``case_run_execute`` scoring inline. The baseline is the ceiling that
``runs/tests/test_perf.py`` pins for each (a ratio above 1.00 fails that test); ``--sql`` prints
the statements of the inline path. PostgreSQL writes a batch of events with one ``COPY``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from bench.scratch_django import django_setup  # noqa: E402

django_setup()

from django.db import connection  # noqa: E402
from django.test.utils import CaptureQueriesContext  # noqa: E402

FIVE_TOOLS = [{"tool": "read_file", "args": {"path": "/workspace/notes.txt"}}] * 5 + [{"submit": "{{last_result}}"}]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sql", action="store_true", help="print the statements of the inline-scoring path")
    args = parser.parse_args()

    from bench.throughput_packs import captured_run
    from runs import pipeline
    from runs.tests.test_perf import EXECUTE_AND_SCORE_MAX, EXECUTE_MAX, FINALIZE_MAX

    with captured_run("native", FIVE_TOOLS, cases=6, max_in_flight=2) as captured:

        def next_case() -> int:
            item = next(i for i in captured if i[0] == "runs.case_run_execute")
            captured.remove(item)
            return int(item[1][0])

        pipeline.case_run_execute(case_run_id=next_case())  # warms the process's manifest cache
        case_run_id = next_case()
        with CaptureQueriesContext(connection) as execute:
            pipeline.case_run_execute(case_run_id=case_run_id)
        with CaptureQueriesContext(connection) as finalize:
            pipeline.case_run_finalize(case_run_id=case_run_id)
        with CaptureQueriesContext(connection) as inline:
            pipeline.case_run_execute(case_run_id=next_case(), score_inline=True)

    print(f"statements per case on {connection.vendor} (baseline: the ceilings pinned in runs/tests/test_perf.py)")
    print(f"{'':36} {'now':>5} {'baseline':>9} {'ratio':>6}")
    for label, measured, ceiling in [
        ("case_run_execute", len(execute), EXECUTE_MAX),
        ("case_run_finalize", len(finalize), FINALIZE_MAX),
        ("case_run_execute, scoring inline", len(inline), EXECUTE_AND_SCORE_MAX),
    ]:
        print(f"{label:36} {measured:5d} {ceiling:9d} {measured / ceiling:6.2f}")
    if args.sql:
        for query in inline.captured_queries:
            print("   ", query["sql"][:150])
    return 0


if __name__ == "__main__":
    sys.exit(main())

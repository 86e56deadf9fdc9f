"""Memory and CPU of a big run's ``results.csv`` and ``results.json`` (not a test), streamed
against built whole in memory, in the same run (docs/runs.md, "Exports and the offline report").

    .venv/bin/python bench/results_export.py [--cases 5000] [--lanes 4] [--output-chars 2000] [--rounds 3]

A fresh SQLite database gets one run of ``--lanes`` lanes × ``--cases`` cases, every case run with
a final output of ``--output-chars`` characters. Each round, interleaved:

- ``streamed``: what the views send: ``runs.results.csv_lines`` / ``json_chunks``, each chunk
  dropped as soon as it is made (a client reading the response);
- ``built``: the baseline, the same records made into one document in memory first (every row
  read into a list, then written to one string) — what a non-streamed view would do.

Printed: the median peak of Python allocations (tracemalloc) and CPU time (user+sys) per export,
and the streamed/built ratio. The bench fails (exit 1) unless both produce the same bytes.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import statistics
import sys
import time
import tracemalloc
from collections.abc import Callable, Iterable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from bench.scratch_django import django_setup  # noqa: E402

django_setup()


def make_run(cases: int, lanes: int, output_chars: int):
    from django.core.management import call_command

    from packs.models import Case
    from runs import services
    from runs.models import CaseRun, CaseStatus
    from runs.tests.factories import make_deployment, native_pack_yaml, publish
    from workspaces.models import Workspace

    call_command("migrate", verbosity=0)
    workspace = Workspace.objects.create(slug="bench-export", name="Bench export")
    version = publish(workspace, None, native_pack_yaml(cases=1, slug="bench-export"))
    deployments = [make_deployment(workspace, name=f"lane-{i}").pk for i in range(lanes)]
    from runs import queue

    queue.capture([])
    try:
        run = services.run_create(workspace=workspace, user=None, pack_version=version, deployment_ids=deployments)
    finally:
        queue.capture(None)
    CaseRun.objects.filter(run=run).delete()
    case = Case.objects.filter(pack_version=version).first()
    text = ("The answer is 42, " * (output_chars // 18 + 1))[:output_chars]
    rows = [
        CaseRun(
            run=run, lane=lane, case=case, case_key=f"case-{n:06d}", position=n, status=CaseStatus.COMPLETED,
            final_output=text, passed=n % 3 != 0, score=(n % 10) / 10, duration_ms=1000 + n, input_tokens=500,
            output_tokens=120, total_tokens=620,
        )
        for n in range(cases)
        for lane in run.lanes.all()
    ]  # fmt: skip
    CaseRun.objects.bulk_create(rows, batch_size=1000)
    return run


def built_csv(run) -> str:
    from runs.results import CSV_COLUMNS, _csv_cell, result_record
    from runs.selectors import results_rows, run_masker

    masker = run_masker(run=run)
    records = [result_record(row, masker) for row in list(results_rows(run=run))]
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(CSV_COLUMNS)
    writer.writerows([_csv_cell(r[c]) for c in CSV_COLUMNS] for r in records)
    return buffer.getvalue()


def built_json(run) -> str:
    from runs.results import json_chunks

    head = next(json_chunks(run))  # the same run header
    from runs.results import result_record
    from runs.selectors import results_rows, run_masker

    masker = run_masker(run=run)
    records = [result_record(row, masker) for row in list(results_rows(run=run))]
    return head + ",".join("\n" + json.dumps(r, ensure_ascii=False) for r in records) + "\n]}\n"


def drain(chunks: Iterable[str]) -> int:
    return sum(len(c) for c in chunks)


def measure(fn: Callable[[], object]) -> tuple[float, float, object]:
    tracemalloc.start()
    cpu = time.process_time()
    result = fn()
    cpu = time.process_time() - cpu
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak / 2**20, cpu, result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", type=int, default=5000)
    parser.add_argument("--lanes", type=int, default=4)
    parser.add_argument("--output-chars", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()

    from runs.results import csv_lines, json_chunks

    run = make_run(args.cases, args.lanes, args.output_chars)
    if "".join(csv_lines(run)) != built_csv(run) or "".join(json_chunks(run)) != built_json(run):
        print("streamed and built exports differ")
        return 1
    paths = {
        ("csv", "streamed"): lambda: drain(csv_lines(run)),
        ("csv", "built"): lambda: len(built_csv(run)),
        ("json", "streamed"): lambda: drain(json_chunks(run)),
        ("json", "built"): lambda: len(built_json(run)),
    }
    peaks: dict[tuple[str, str], list[float]] = {k: [] for k in paths}
    cpus: dict[tuple[str, str], list[float]] = {k: [] for k in paths}
    size: dict[str, object] = {}
    for _ in range(args.rounds):
        for key, fn in paths.items():  # interleaved: every path in every round
            peak, cpu, length = measure(fn)
            peaks[key].append(peak)
            cpus[key].append(cpu)
            size[key[0]] = length
    rows = args.cases * args.lanes
    print(
        f"{rows} case runs ({args.cases} cases × {args.lanes} lanes, {args.output_chars}-character outputs), {args.rounds} rounds, medians"
    )
    print(f"{'export':8} {'path':9} {'bytes':>11} {'peak MiB':>9} {'CPU s':>7}")
    for fmt in ("csv", "json"):
        for path in ("streamed", "built"):
            key = (fmt, path)
            print(f"{fmt:8} {path:9} {size[fmt]:>11} {statistics.median(peaks[key]):9.1f} {statistics.median(cpus[key]):7.2f}")
        ratio_peak = statistics.median(peaks[(fmt, "streamed")]) / statistics.median(peaks[(fmt, "built")])
        ratio_cpu = statistics.median(cpus[(fmt, "streamed")]) / statistics.median(cpus[(fmt, "built")])
        print(f"{fmt:8} streamed/built: peak memory {ratio_peak:.3f}, CPU {ratio_cpu:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Fair scheduling through a real Celery worker: a 1-case run's time while another workspace runs
a big one, against the same 1-case run on the idle worker, measured in the same run.

    .venv/bin/python bench/fairness.py                                   # embedded defaults
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/agentclash_bench \\
    CELERY_BROKER_URL=redis://127.0.0.1:6379/12 .venv/bin/python bench/fairness.py --cases 1000

Target (issue 27, docs/operations.md "Fair scheduling"): while another workspace runs 1,000 cases
(its runtime profile asking for ``max_in_flight_cases: 150``), a 1-case run finishes within twice
its time on an idle worker: the printed ratio is at most 2.0 (exit 1 otherwise).

The busy workspace's run is cancelled once the figures are taken. ``--unfair`` starts the worker
with the fairness settings off (no workspace cap, ceiling 1000) for a figure to compare; the
broker priority stays.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "agentclash.settings.local")
os.environ.setdefault("DEBUG", "false")
os.environ.setdefault("DATABASE_URL", f"sqlite:///{ROOT / 'var' / 'bench-fairness.sqlite3'}")

import django  # noqa: E402

django.setup()

from django.core.management import call_command  # noqa: E402

from bench.throughput_packs import SCRIPTS, pack_yaml  # noqa: E402

TERMINAL = ("completed", "failed", "cancelled")


def one_case_run(workspace, version, deployment_id: int, timeout: float) -> float:
    """Seconds from creating a 1-case run to its end (it must complete)."""
    from runs import services
    from runs.models import Run

    started = time.perf_counter()
    run = services.run_create(workspace=workspace, user=None, pack_version=version, deployment_ids=[deployment_id])
    deadline = started + timeout
    while (status := Run.objects.filter(pk=run.pk).values_list("status", flat=True).get()) not in TERMINAL:
        if time.perf_counter() > deadline:
            raise SystemExit(f"the 1-case run {run.pk} did not finish within {timeout:.0f}s ({status})")
        time.sleep(0.01)
    if status != "completed":
        raise SystemExit(f"the 1-case run {run.pk} ended {status}")
    return time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", type=int, default=1000, help="cases of the busy workspace's run")
    parser.add_argument("--in-flight", type=int, default=150, help="the busy lane's max_in_flight_cases")
    parser.add_argument("--repeat", type=int, default=5, help="1-case runs per phase (medians are printed)")
    parser.add_argument("--concurrency", type=int, default=2, help="worker pool processes")
    parser.add_argument("--variant", default="read", choices=sorted(SCRIPTS))
    parser.add_argument("--unfair", action="store_true", help="worker without the workspace cap and ceiling")
    args = parser.parse_args()

    from django.conf import settings
    from django.db import connection

    from runs import queue, services
    from runs.models import CaseRun, Run
    from runs.tests.factories import make_deployment, publish
    from runs.tests.worker import Worker, database_url
    from workspaces.models import Workspace

    call_command("migrate", verbosity=0)
    tag = uuid.uuid4().hex[:8]
    busy_ws = Workspace.objects.create(slug=f"busy-{tag}", name=f"Busy {tag}")
    small_ws = Workspace.objects.create(slug=f"small-{tag}", name=f"Small {tag}")
    script = SCRIPTS[args.variant]
    busy_version = publish(busy_ws, None, pack_yaml(args.variant, cases=args.cases, slug=f"busy-{tag}"))
    small_version = publish(small_ws, None, pack_yaml(args.variant, cases=1, slug=f"small-{tag}"))
    busy_lane = make_deployment(busy_ws, name="busy", script=script, max_in_flight_cases=args.in_flight).pk
    small_lane = make_deployment(small_ws, name="small", script=script).pk
    env = {
        "DJANGO_SETTINGS_MODULE": os.environ["DJANGO_SETTINGS_MODULE"], "DATABASE_URL": database_url(),
        "DEBUG": "false", "LOG_LEVEL": "ERROR",
    }  # fmt: skip
    if args.unfair:
        env |= {"RUNS_WORKSPACE_MAX_IN_FLIGHT": "0", "RUNS_MAX_IN_FLIGHT_CEILING": "1000"}
    print(
        f"db={connection.vendor} broker={settings.CELERY_BROKER_URL} concurrency={args.concurrency} cores={os.cpu_count()} "
        f"busy run: {args.cases} cases, max_in_flight_cases={args.in_flight}; "
        f"{'UNFAIR (no cap, ceiling 1000)' if args.unfair else f'cap {settings.RUNS_WORKSPACE_MAX_IN_FLIGHT}, ceiling {settings.RUNS_MAX_IN_FLIGHT_CEILING}'}"
    )
    print(f"load average before: {os.getloadavg()[0]:.2f}")
    worker = Worker(concurrency=args.concurrency, extra_env=env).start()
    queue.use_queue(worker.queue)
    busy = None
    try:
        time.sleep(4)  # let the pool boot before any clock starts
        one_case_run(small_ws, small_version, small_lane, 60)  # warm: manifest caches, connections
        idle = [one_case_run(small_ws, small_version, small_lane, 60) for _ in range(args.repeat)]
        busy = services.run_create(workspace=busy_ws, user=None, pack_version=busy_version, deployment_ids=[busy_lane])
        while CaseRun.objects.filter(run=busy, status="completed").count() < min(20, args.cases // 4):
            time.sleep(0.1)
        loaded = []
        for _ in range(args.repeat):
            loaded.append(one_case_run(small_ws, small_version, small_lane, 600))
            left = CaseRun.objects.filter(run=busy, status__in=["queued", "running"]).count()
            if not left:
                print("  (the busy run finished during the measurement: use more --cases)")
                break
        done = CaseRun.objects.filter(run=busy, status="completed").count()
    finally:
        if busy is not None and not Run.objects.get(pk=busy.pk).is_terminal:
            services.run_cancel(run=busy, user=None)
        worker.stop()
    idle_median, loaded_median = statistics.median(idle), statistics.median(loaded)
    ratio = loaded_median / idle_median
    print(f"  1-case run on the idle worker     median {idle_median * 1000:8.1f} ms  (runs: {', '.join(f'{t * 1000:.0f}' for t in idle)})")
    print(
        f"  1-case run beside the busy run    median {loaded_median * 1000:8.1f} ms  (runs: {', '.join(f'{t * 1000:.0f}' for t in loaded)})"
    )
    print(f"  ratio {ratio:.2f} (target <= 2.00); the busy run had completed {done} of {args.cases} cases when the figures were taken")
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    return 0 if ratio <= 2.0 else 1


if __name__ == "__main__":
    sys.exit(main())

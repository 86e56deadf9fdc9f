"""Idle CPU of a Celery worker on the embedded ``filesystem://`` broker, per polling interval.

    .venv/bin/python bench/idle_worker.py [--intervals 0.1 0.02 0.01] [--seconds 20] [--concurrency 4]

The filesystem transport polls its folder every ``CELERY_BROKER_POLLING_INTERVAL`` seconds;
shorter means less latency per case (docs/performance.md) and more CPU spent doing nothing.
For each interval this starts an idle worker (its own queue, SQLite), lets it boot, then counts
the CPU of its main and pool processes over ``--seconds``. The first interval is the baseline.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.proc_stats import CpuTracker, children  # noqa: E402


def idle_cpu(interval: float, seconds: float, concurrency: int, scratch: str) -> float:
    """CPU milliseconds per second of wall time the idle worker used (all its processes)."""
    queue = f"idle-{uuid.uuid4().hex[:8]}"
    env = dict(os.environ)
    env.update(
        DJANGO_SETTINGS_MODULE="agentclash.settings.local",
        DATABASE_URL=f"sqlite:///{scratch}/idle.sqlite3",
        CELERY_BROKER_URL="filesystem://",
        CELERY_BROKER_POLLING_INTERVAL=str(interval),
        DEBUG="false",
        LOG_LEVEL="ERROR",
    )
    worker = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "agentclash", "worker", "-Q", queue, "-c", str(concurrency),
         "-n", f"{queue}@%h", "--without-gossip", "--without-mingle", "--without-heartbeat", "-l", "ERROR"],
        cwd=ROOT, env=env, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        time.sleep(6)  # boot
        tracker = CpuTracker()
        pids = [worker.pid, *children(worker.pid)]
        tracker.begin(pids)
        time.sleep(seconds)
        tracker.sample([worker.pid, *children(worker.pid)])
        return tracker.seconds * 1000 / seconds
    finally:
        worker.terminate()
        try:
            worker.wait(timeout=20)
        except subprocess.TimeoutExpired:
            worker.kill()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--intervals", type=float, nargs="+", default=[0.1, 0.02, 0.01])
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--concurrency", type=int, default=4)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="agentclash-idle-") as scratch:
        subprocess.run(
            [sys.executable, "manage.py", "migrate", "-v0"],
            cwd=ROOT, check=True, env={**os.environ, "DATABASE_URL": f"sqlite:///{scratch}/idle.sqlite3"},
        )  # fmt: skip
        print(f"idle worker, concurrency {args.concurrency}, {args.seconds:g} s each (baseline: the first interval)")
        print(f"{'interval':>10} {'CPU ms/s':>9} {'% of a core':>12} {'ratio':>6}")
        baseline = None
        for interval in args.intervals:
            cost = idle_cpu(interval, args.seconds, args.concurrency, scratch)
            baseline = baseline or cost
            print(f"{interval:9.3f}s {cost:9.1f} {cost / 10:11.2f}% {cost / baseline if baseline else 0:6.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

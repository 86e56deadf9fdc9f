"""CPU per publish of a case's task (``runs.case_run_execute``) on Redis, against the old path in the same run.

    CELERY_BROKER_URL=redis://127.0.0.1:6379/10 .venv/bin/python bench/publish_bench.py [--publishes 1000] [--rounds 5] [--profile 30]

What a pool process pays to send the next case (docs/performance.md, "Publishing a case"). Three
paths publish ``--publishes`` tasks each to a private queue, interleaved for ``--rounds`` rounds:

- ``before``: what ``runs.queue.enqueue`` did before: ``app.send_task(name, args=[id], queue=q)``
  through kombu's stock Redis transport (a second Celery app with the same settings);
- ``client reuse``: the same ``send_task`` through ``agentclash.broker.RedisTransport`` (one
  ``redis.Redis`` client per channel instead of one per publish);
- ``after``: ``runs.queue.enqueue`` as it is now (that transport and ``runs.queue.TaskSender``).

Printed per path: the median CPU and wall time per publish over the rounds (and every round's
CPU), against ``before``. The bench fails (exit 1) unless every publish reached the queue and a
message of each path is the same as ``before``'s apart from its ids. The queue is deleted
afterwards with its bindings. No database is touched.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import statistics
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "agentclash.settings.local")
os.environ.setdefault("DEBUG", "false")

import django  # noqa: E402

django.setup()

from django.conf import settings  # noqa: E402

TASK = "runs.case_run_execute"


def _stock_app():
    """A second app with the same settings on kombu's own Redis transport, not the current app."""
    from celery import Celery

    stock = Celery("agentclash", set_as_current=False)
    stock.config_from_object("django.conf:settings", namespace="CELERY")
    stock.conf.broker_transport = "kombu.transport.redis:Transport"
    stock.autodiscover_tasks()
    stock.finalize(auto=True)  # the worker's app is finalized: send_task then adds the task's options
    return stock


def _comparable(raw: Any) -> dict:
    """A message without what differs between any two publishes (ids, tags, the app's reply-to oid)."""
    message = json.loads(raw)
    for key in ("id", "root_id"):
        message["headers"].pop(key, None)
    for key in ("correlation_id", "delivery_tag", "reply_to"):
        message["properties"].pop(key, None)
    return message


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--publishes", type=int, default=1000, help="publishes per path and round")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--profile", type=int, default=0, help="print this many functions of the 'after' path by cumulative CPU")
    args = parser.parse_args()
    url = settings.CELERY_BROKER_URL
    if not url.startswith(("redis://", "rediss://")):
        print(f"CELERY_BROKER_URL must be a redis:// URL (it is {url!r})", file=sys.stderr)
        return 2

    import redis

    from agentclash.celery import app
    from runs import queue
    from runs.jobs import CaseRunExecute

    app.loader.import_default_modules()
    app.finalize(auto=True)
    stock = _stock_app()
    name = f"publish-bench-{uuid.uuid4().hex[:8]}"
    queue.use_queue(name)
    paths: dict[str, Callable[[int], object]] = {
        "before": lambda i: stock.send_task(TASK, args=[i], queue=name),
        "client reuse": lambda i: app.send_task(TASK, args=[i], queue=name),
        "after": lambda i: queue.enqueue(CaseRunExecute(case_run_id=i)),
    }
    client = redis.Redis.from_url(url)
    cpu: dict[str, list[float]] = {path: [] for path in paths}
    wall: dict[str, list[float]] = {path: [] for path in paths}
    ok = True
    try:
        for publish in paths.values():  # connect, declare, import
            for i in range(20):
                publish(i)
        client.delete(name)
        for _ in range(args.rounds):
            for path, publish in paths.items():
                cpu_start, wall_start = time.process_time(), time.perf_counter()
                for i in range(args.publishes):
                    publish(i)
                cpu[path].append((time.process_time() - cpu_start) * 1e6 / args.publishes)
                wall[path].append((time.perf_counter() - wall_start) * 1e6 / args.publishes)
                queued = client.llen(name)
                if queued != args.publishes:
                    print(f"  {path}: {queued} of {args.publishes} messages reached the queue")
                    ok = False
                client.delete(name)
        messages = {}
        for path, publish in paths.items():
            publish(7)
            messages[path] = _comparable(client.rpop(name))
        for path, message in messages.items():
            if message != messages["before"]:
                print(f"  {path}: its message differs from before's:\n    {message}\n    {messages['before']}")
                ok = False
        profiler = cProfile.Profile(time.process_time) if args.profile else None
        if profiler:
            profiler.enable()
            for i in range(args.publishes):
                paths["after"](i)
            profiler.disable()
    finally:
        client.delete(name, f"_kombu.binding.{name}", f"_kombu.binding_permanent.{name}")  # kombu's declarations
        queue.use_queue(None)

    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"broker={url} task={TASK} publishes={args.publishes} x {args.rounds} rounds (interleaved), load average {load}")
    base = statistics.median(cpu["before"])
    for path in paths:
        median_cpu, median_wall = statistics.median(cpu[path]), statistics.median(wall[path])
        rounds = ", ".join(f"{x:.0f}" for x in cpu[path])
        print(
            f"  {path:<13} CPU {median_cpu:6.1f} us/publish ({median_cpu / base:.2f} x before)   "
            f"wall {median_wall:6.1f} us   rounds: {rounds}"
        )
    print(f"  messages: {'the same as before apart from ids' if ok else 'DIFFERENT or lost (see above)'}")
    if profiler:
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(args.profile)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

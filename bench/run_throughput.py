"""Run throughput through real Celery workers: cases/s, events/s, peak worker RSS, orchestration overhead.

    .venv/bin/python bench/run_throughput.py --cases 1000 --concurrency 4
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/agentclash_runs_dev \\
    CELERY_BROKER_URL=redis://127.0.0.1:6379/5 .venv/bin/python bench/run_throughput.py

A native pack with ``--cases`` cases, two scripted lanes, five tool calls per case. The same
cases are also run through the engine alone (no Celery, no DB) to get the per-case engine time;
the ratio says how much the orchestration costs on top. Target (PostgreSQL + Redis, 2 cores):
>= 50 case executions/s, worker RSS < 300 MB and flat.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "agentclash.settings.local")
os.environ.setdefault("DEBUG", "false")
os.environ.setdefault("DATABASE_URL", f"sqlite:///{ROOT / 'var' / 'bench-runs.sqlite3'}")

import django  # noqa: E402

django.setup()

from django.core.management import call_command  # noqa: E402
from django.db import connection  # noqa: E402

FIVE_TOOLS = [{"tool": "read_file", "args": {"path": "/workspace/notes.txt"}}] * 5 + [{"submit": "{{last_result}}"}]


def proc_children(pid: int) -> list[int]:
    found = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            found += [int(c) for c in (task / "children").read_text().split()]
        except OSError:
            pass
    return found


def vm_kb(pid: int, key: str) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(key + ":"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


class RssSampler(threading.Thread):
    """Peak (VmHWM) of the worker's main process and each pool child, sampled every 0.5 s."""

    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.pid = pid
        self.peaks: dict[int, int] = {}
        self.total_rss_samples: list[int] = []
        self.stopped = threading.Event()

    def run(self) -> None:
        while not self.stopped.wait(0.5):
            pids = [self.pid, *proc_children(self.pid)]
            for pid in pids:
                self.peaks[pid] = max(self.peaks.get(pid, 0), vm_kb(pid, "VmHWM"))
            self.total_rss_samples.append(sum(vm_kb(pid, "VmRSS") for pid in pids))


def engine_only(version, cases: int) -> float:
    """Mean seconds per case for the engine alone: sandbox, staging, toolset, loop. No Celery, no DB writes."""
    from django.conf import settings

    from engine.modes import CaseRequest, run_case
    from engine.providers import create_provider
    from engine.sandbox import SandboxConfig, create_sandbox
    from engine.tools import build_toolset
    from runs.services.staging import challenge_for, engine_case, staged_files

    manifest = version.manifest
    input_set = version.input_sets.get()
    rows = list(input_set.cases.order_by("position")[:cases])
    config = {"script": {"default": FIVE_TOOLS}}
    started = time.perf_counter()
    for row in rows:
        case = engine_case(manifest, input_set.key, row)
        challenge = challenge_for(manifest, row.challenge_key)
        sandbox = create_sandbox(SandboxConfig.from_manifest(manifest), base_dir=str(settings.SANDBOX_ROOT))
        try:
            sandbox.stage_files(staged_files(manifest=manifest, challenge=challenge, case=case, run_context={}))
            toolset = build_toolset(manifest, sandbox=sandbox, secrets={}, deployment_config=config, event_sink=lambda e: None)
            provider = create_provider("scripted", api_key=None, base_url=None, deployment_config=config, case_key=row.case_key)
            request = CaseRequest(
                execution_mode="native",
                run_id="bench",
                lane_id="bench",
                case_key=row.case_key,
                event_id_prefix="bench",
                model="scripted",
                manifest=manifest,
                challenge=challenge,
                case=case,
                deployment_config=config,
                runtime_profile={"max_iterations": 10},
            )
            outcome = run_case(request, provider=provider, toolset=toolset, event_sink=lambda e: None, cancel_check=lambda: False)
            assert outcome.status == "completed", outcome.error
        finally:
            sandbox.destroy()
    return (time.perf_counter() - started) / len(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", type=int, default=1000)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--in-flight", type=int, default=16, help="max_in_flight_cases per lane")
    parser.add_argument("--engine-sample", type=int, default=200, help="cases for the engine-only baseline")
    args = parser.parse_args()

    from runs import queue, services
    from runs.models import CaseRun, Run, RunEvent
    from runs.tests.factories import make_deployment, native_pack_yaml, publish
    from runs.tests.worker import Worker, database_url
    from workspaces.models import Workspace

    call_command("migrate", verbosity=0)
    tag = uuid.uuid4().hex[:8]
    workspace = Workspace.objects.create(slug=f"bench-{tag}", name=f"Bench {tag}")
    version = publish(workspace, None, native_pack_yaml(cases=args.cases, slug=f"bench-{tag}"))
    lanes = [
        make_deployment(workspace, name=f"lane-{i}", script=FIVE_TOOLS, max_iterations=10, max_in_flight_cases=args.in_flight).pk
        for i in range(2)
    ]
    print(
        f"db={connection.vendor} broker={os.environ.get('CELERY_BROKER_URL', 'filesystem://')} cases={args.cases} x 2 lanes, "
        f"concurrency={args.concurrency}"
    )

    per_case_engine = engine_only(version, min(args.engine_sample, args.cases))

    worker = Worker(concurrency=args.concurrency, extra_env={
        "DJANGO_SETTINGS_MODULE": os.environ["DJANGO_SETTINGS_MODULE"], "DATABASE_URL": database_url(),
        "CELERY_DB_REUSE_MAX": "1000", "DEBUG": "false", "LOG_LEVEL": "ERROR",
    })  # fmt: skip
    worker.start()
    sampler = RssSampler(worker.pid)
    sampler.start()
    time.sleep(3)  # let the pool boot before the clock starts
    queue.use_queue(worker.queue)
    try:
        started = time.perf_counter()
        run = services.run_create(workspace=workspace, user=None, pack_version=version, deployment_ids=lanes)
        total = 2 * args.cases
        last = 0
        while True:
            time.sleep(1)
            status = Run.objects.filter(pk=run.pk).values_list("status", flat=True).get()
            done = CaseRun.objects.filter(run=run, status__in=["completed", "failed", "cancelled"]).count()
            if done // max(1, total // 10) != last // max(1, total // 10):
                print(f"  {done}/{total} cases, {time.perf_counter() - started:.1f}s")
            last = done
            if status in ("completed", "failed", "cancelled"):
                break
        elapsed = time.perf_counter() - started
    finally:
        sampler.stopped.set()
        worker.stop()
    run.refresh_from_db()
    events = RunEvent.objects.filter(run=run).count()
    failed = CaseRun.objects.filter(run=run).exclude(status="completed").count()
    main_peak = sampler.peaks.get(worker.pid, 0) / 1024
    child_peaks = [kb / 1024 for pid, kb in sampler.peaks.items() if pid != worker.pid]
    samples = sampler.total_rss_samples
    third = max(1, len(samples) // 3)
    early = sum(samples[:third]) / third / 1024 if samples else 0
    late = sum(samples[-third:]) / third / 1024 if samples else 0
    rate = total / elapsed
    print(f"run {run.pk}: {run.status} ({failed} cases not completed) in {elapsed:.1f}s")
    print(f"case executions/s: {rate:.1f}   events/s: {events / elapsed:.0f} ({events} events)")
    print(
        f"peak RSS: main {main_peak:.0f} MB, pool children max {max(child_peaks, default=0):.0f} MB, "
        f"sum of peaks {main_peak + sum(child_peaks):.0f} MB; total RSS early {early:.0f} MB → late {late:.0f} MB"
    )
    print(
        f"engine only: {per_case_engine * 1000:.1f} ms/case (= {1 / per_case_engine:.0f} cases/s on one core); "
        f"through Celery+DB: {1000 * args.concurrency / rate:.1f} ms per case per pool process; "
        f"overhead ratio {args.concurrency / rate / per_case_engine:.2f}x"
    )


if __name__ == "__main__":
    main()

"""Repeated trials at load: a cases × trials × 2-lane run on the embedded defaults, then its pages.

    .venv/bin/python bench/trials_load.py                      # 500 cases × 10 trials × 2 lanes (issue 24)
    .venv/bin/python bench/trials_load.py --cases 100          # smaller; the full size is extrapolated

Issue 24's target: a 500-case × 10-trial × 2-lane run completes on the embedded defaults (SQLite,
scripted agents, a cheap ``prompt_eval`` pack) and its scorecard and gate pages answer in under
300 ms, with a query count that does not grow with the trials.

What it does, in a fresh SQLite database (``var/bench-trials.sqlite3``):

1. publishes a ``prompt_eval`` pack of ``--cases`` cases and two scripted deployments (a steady one
   and a stochastic one, ``script_mix`` 0.8 / 0.2 with a seed);
2. the **baseline**: a 1-trial run of the two, executed to the end in this process through the
   worker's own pipeline (``runs.pipeline.case_run_execute`` with inline scoring, every task the
   pipeline enqueues drained in order — the Celery transport left out); then a 2-trial run and the
   **trials** run, ``--trials`` trials of every case, executed the same way;
3. for each run: a comparison of its two lanes and a gate evaluation; then, as a signed-in member
   through Django's test client, the run page (matrix), the run scorecard, both lane scorecards,
   the comparison page (which shows its gate results), the gates list and the gate evaluation
   itself (the comparison page's POST), each requested ``--repeat`` times: median ms and the
   query count, the trials run against the 1-trial baseline (ratio).

Printed: execution wall and CPU (user+sys) per case run and in total, for both runs (and, with a
smaller ``--cases``, the full size extrapolated linearly), then one row per page. Exit 1 when a
trials-run page is over 300 ms (median wall) or its query count differs from the 2-trial run's
(constant in trials; a page may add one query for the trials' counts once there are several).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
DB = ROOT / "var" / "bench-trials.sqlite3"
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "agentclash.settings.local")
os.environ.setdefault("DEBUG", "false")
os.environ.setdefault("DATABASE_URL", f"sqlite:///{DB}")

import django  # noqa: E402

django.setup()

from django.core.management import call_command  # noqa: E402
from django.db import connection, reset_queries  # noqa: E402
from django.test import Client  # noqa: E402
from django.test.utils import CaptureQueriesContext  # noqa: E402

TARGET_MS = 300.0
FULL_CASES, FULL_TRIALS = 500, 10


def pack_yaml(cases: int) -> str:
    lines = []
    for i in range(cases):
        lines.append(
            f"""      - challenge_key: sums
        case_key: case-{i:04d}
        inputs:
          - key: number
            kind: text
            value: "{i}"
        expectations:
          - key: answer
            kind: text
            value: "answer {i}"
"""
        )
    return f"""pack:
  slug: trials-load
  name: Trials load
  family: testing
version:
  number: 1
  execution_mode: prompt_eval
  evaluation_spec:
    name: trials-load-v1
    version_number: 1
    judge_mode: deterministic
    validators:
      - key: answer
        type: contains
        target: final_output
        expected_from: case.expectations.answer
    metrics:
      - key: completed
        type: boolean
        collector: run_completed_successfully
    scorecard:
      dimensions: [correctness]
challenges:
  - key: sums
    title: Say the answer
    category: text
    difficulty: easy
    instructions: Say "answer" and the number.
input_sets:
  - key: default
    name: Default
    cases:
{"".join(lines)}"""


RIGHT = {"default": [{"text": "answer {{input.number}}"}]}
WRONG = {"default": [{"text": "no idea"}]}


def setup(cases: int):
    from django.contrib.auth import get_user_model

    from infrastructure.models import AgentDeployment, ExecutionTarget, ProviderAccount, RuntimeProfile
    from packs.services import pack_publish
    from workspaces.models import Role, Workspace, WorkspaceMembership

    user = get_user_model().objects.create_user(username="bench", password="bench-password")
    workspace = Workspace.objects.create(slug="bench", name="Bench")
    WorkspaceMembership.objects.create(workspace=workspace, user=user, role=Role.ADMIN)
    version = pack_publish(workspace=workspace, user=user, source=pack_yaml(cases))
    account = ProviderAccount.objects.create(workspace=workspace, name="scripted", provider_key="scripted")
    profile = RuntimeProfile.objects.create(
        workspace=workspace, name="prompt eval", execution_target=ExecutionTarget.PROMPT_EVAL, max_iterations=1, max_in_flight_cases=64
    )
    steady = AgentDeployment.objects.create(
        workspace=workspace, name="steady", provider_account=account, model="scripted-1", runtime_profile=profile,
        deployment_config={"script": RIGHT},
    )  # fmt: skip
    mixed = AgentDeployment.objects.create(
        workspace=workspace, name="mixed", provider_account=account, model="scripted-1", runtime_profile=profile,
        deployment_config={"script_mix": [{"weight": 0.8, "script": RIGHT}, {"weight": 0.2, "script": WRONG}], "seed": 24},
    )  # fmt: skip
    return user, workspace, version, [steady.pk, mixed.pk]


def execute(run_id: int, items: list) -> None:
    """Drain every task the run enqueues, in order, with the worker's pipeline (inline scoring)."""
    from runs import pipeline, services

    tasks: dict[str, Callable[..., object]] = {
        "runs.run_start": lambda run_id: services.run_start(run_id=run_id),
        "runs.case_run_execute": lambda case_run_id, retry_of=None, stale_seconds=None: pipeline.case_run_execute(
            case_run_id=case_run_id, retry_of=retry_of, stale_seconds=stale_seconds, score_inline=True
        ),
        "runs.case_run_finalize": lambda case_run_id: pipeline.case_run_finalize(case_run_id=case_run_id),
        "runs.run_round_advance": lambda run_id: pipeline.run_round_advance(run_id=run_id),
    }
    while items:
        name, args, _ = items.pop(0)
        if name in tasks:
            tasks[name](*args)


def run_once(user, workspace, version, deployments: list[int], trials: int) -> dict:
    from runs import queue, services
    from runs.models import CaseRun, Run

    items: list = []
    queue.capture(items)
    try:
        cpu0, wall0 = os.times(), time.perf_counter()
        run = services.run_create(workspace=workspace, user=user, pack_version=version, deployment_ids=deployments, repeats=trials)
        execute(run.pk, items)
        wall = time.perf_counter() - wall0
        cpu1 = os.times()
    finally:
        queue.capture(None)
    run = Run.objects.get(pk=run.pk)
    count = CaseRun.objects.filter(run=run).count()
    assert run.status == "completed", f"run {run.pk} ended {run.status}: {run.failure_reason}"
    cpu = (cpu1.user - cpu0.user) + (cpu1.system - cpu0.system)
    return {"run": run, "case_runs": count, "wall": wall, "cpu": cpu}


def pages(run, user, repeat: int) -> dict[str, tuple[float, float, int]]:
    """Median wall ms, median CPU ms (this process: the server's work, not the load of the
    machine) and the query count of every page of the run (its comparison and gate included)."""
    from comparisons.services import comparison_create, gate_evaluate

    lanes = list(run.lanes.order_by("lane_index"))
    comparison = comparison_create(
        workspace=run.workspace, user=user, baseline_run=run, candidate_run=run, baseline_lane=lanes[0], candidate_lane=lanes[1]
    )
    gate_evaluate(comparison=comparison, user=user)
    client = Client()
    client.force_login(user)
    ws = f"/w/{run.workspace.slug}"
    urls = {
        "run page (matrix)": f"{ws}/runs/{run.pk}/",
        "run scorecard": f"{ws}/runs/{run.pk}/scorecard/",
        "lane scorecard (baseline)": f"{ws}/runs/{run.pk}/lanes/{lanes[0].pk}/scorecard/",
        "lane scorecard (candidate)": f"{ws}/runs/{run.pk}/lanes/{lanes[1].pk}/scorecard/",
        "comparison and its gate": f"{ws}/comparisons/{comparison.pk}/",
        "gates list": f"{ws}/gates/",
        "gate evaluation (POST)": f"{ws}/comparisons/{comparison.pk}/gate/",
    }
    found: dict[str, tuple[float, float, int]] = {}
    for label, url in urls.items():
        times, cpu = [], []
        queries = 0
        if "POST" not in label:
            client.get(url, HTTP_HOST="localhost")  # warm-up (template loading, first-use caches): not counted
        for _ in range(repeat):
            reset_queries()
            with CaptureQueriesContext(connection) as captured:
                start, cpu_start = time.perf_counter(), time.process_time()
                if "POST" in label:
                    response = client.post(url, {"policy": ""}, HTTP_HOST="localhost")
                else:
                    response = client.get(url, HTTP_HOST="localhost")
                times.append((time.perf_counter() - start) * 1000)
                cpu.append((time.process_time() - cpu_start) * 1000)
            assert response.status_code == (302 if "POST" in label else 200), f"{url}: {response.status_code}"
            queries = len(captured)
        found[label] = (statistics.median(times), statistics.median(cpu), queries)
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=FULL_CASES)
    parser.add_argument("--trials", type=int, default=FULL_TRIALS)
    parser.add_argument("--repeat", type=int, default=5, help="requests per page (the median is printed)")
    args = parser.parse_args()
    if DB.exists():
        DB.unlink()
    call_command("migrate", verbosity=0)
    user, workspace, version, deployments = setup(args.cases)
    print(f"trials load: {args.cases} cases × {args.trials} trials × 2 lanes, prompt_eval, scripted, SQLite ({DB.name})")
    print(f"load average before: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    base = run_once(user, workspace, version, deployments, 1)
    two = run_once(user, workspace, version, deployments, 2)
    load = run_once(user, workspace, version, deployments, args.trials)
    print(f"load average after the runs: {os.getloadavg()[0]:.2f}")
    print()
    print(f"{'execution':<26}{'case runs':>10}{'wall s':>10}{'cpu s':>10}{'cpu ms/case run':>17}")
    for label, r in (("1 trial (baseline)", base), ("2 trials", two), (f"{args.trials} trials", load)):
        print(f"{label:<26}{r['case_runs']:>10}{r['wall']:>10.1f}{r['cpu']:>10.1f}{1000 * r['cpu'] / r['case_runs']:>17.2f}")
    per_case = load["cpu"] / load["case_runs"]
    print(f"cpu per case run, {args.trials} trials vs 1 trial: ratio {per_case / (base['cpu'] / base['case_runs']):.2f}")
    full = FULL_CASES * FULL_TRIALS * 2
    if load["case_runs"] != full:
        print(
            f"extrapolated to {FULL_CASES} × {FULL_TRIALS} × 2 = {full} case runs: "
            f"~{full * load['wall'] / load['case_runs']:.0f} s wall, ~{full * per_case:.0f} s cpu (linear in case runs)"
        )
    print()
    base_pages = pages(base["run"], user, args.repeat)
    two_pages = pages(two["run"], user, args.repeat)
    load_pages = pages(load["run"], user, args.repeat)
    failed = False
    print(
        f"{'page':<28}{'1 trial ms':>11}{'cpu':>7}{'q':>4}{'2 trials q':>11}{f'{args.trials} trials ms':>15}{'cpu':>7}{'q':>4}"
        f"{'cpu ratio':>10}  verdict"
    )
    for label, (ms1, cpu1, q1) in base_pages.items():
        q2 = two_pages[label][2]
        msn, cpun, qn = load_pages[label]
        ok = msn < TARGET_MS and qn == q2
        failed |= not ok
        verdict = "ok" if ok else ("SLOW" if msn >= TARGET_MS else "") + (" QUERIES GROW" if qn != q2 else "")
        print(f"{label:<28}{ms1:>11.1f}{cpu1:>7.1f}{q1:>4}{q2:>11}{msn:>15.1f}{cpun:>7.1f}{qn:>4}{cpun / max(cpu1, 0.1):>10.2f}  {verdict}")
    print(f"load average after the pages: {os.getloadavg()[0]:.2f} (wall times include waiting for a busy machine; cpu is this process's)")
    print(
        f"\ntarget: every page under {TARGET_MS:.0f} ms (median) with the same query count at 2 and {args.trials} trials "
        "(a page may add one query for the trials' counts once a run has more than one)"
    )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

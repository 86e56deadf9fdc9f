"""Issue 21: a case's path through the project's modules stays short (docs/runs.md, "The pipeline"),
and what an attempt runs under (its pulse, its deadline) is the attempt's own.

The path is measured the way ``bench/case_path.py`` measures it (its tracer, on this test's run):
the distinct calls project code makes into another project module while the worker runs one case.
"""

from __future__ import annotations

import sys

import pytest

from bench.case_path import PathTracer, orchestration, summary
from runs import pipeline, services
from runs.models import CaseRun, CaseStatus
from runs.pipeline import native
from runs.pipeline.hosted import attempt as hosted_attempt
from runs.tests.factories import make_deployment, native_pack_yaml, publish
from runs.tests.hosted_helpers import claim, hosted_deployment
from runs.ticker import TICKER

pytestmark = pytest.mark.django_db

MAX_MODULES = 12
MAX_ENTRIES = 2


def _case_ids(tasks) -> list[int]:
    return sorted(item[1][0] for item in tasks.items if item[0] == "runs.case_run_execute")


def _traced(case_run_id: int) -> tuple[str, dict]:
    tracer, previous = PathTracer(), sys.getprofile()
    sys.setprofile(tracer)
    try:
        result = pipeline.case_run_execute(case_run_id=case_run_id, score_inline=True)
    finally:
        sys.setprofile(previous)
        tracer.owner.clear()
    edges = tracer.edges
    return result, summary([str(edges[0][0]), *orchestration(edges)])


@pytest.fixture
def lane_of_three(workspace, admin, tasks):
    version = publish(workspace, admin, native_pack_yaml(cases=3))
    deployment = make_deployment(workspace, max_in_flight_cases=3)
    services.run_create(workspace=workspace, user=admin, pack_version=version, deployment_ids=[deployment.pk])
    tasks.drain(limit=1)  # run_start dispatches the lane's three cases
    return _case_ids(tasks)


def test_a_case_crosses_at_most_twelve_modules_and_enters_none_more_than_twice(lane_of_three):
    first, middle, _ = lane_of_three
    assert pipeline.case_run_execute(case_run_id=first, score_inline=True) == "completed"  # warms imports and caches
    result, path = _traced(middle)
    assert result == "completed"
    steps = [module for module, _ in path["path"]]
    assert steps[0] == "runs.pipeline.execute"
    # the whole way: claim, context, attempt, scoring with the finish, the lane's refill
    whole_way = {"runs.lifecycle", "runs.pipeline.context", "runs.pipeline.native", "scoring.services.cases", "runs.pipeline.advance"}
    assert whole_way <= set(steps)
    assert path["modules"] <= MAX_MODULES, steps
    assert path["max_entries"] <= MAX_ENTRIES, path["entries"]
    assert CaseRun.objects.get(pk=middle).score_status == "scored"


def test_a_native_attempt_runs_under_its_pulse_and_its_deadline_and_leaves_no_job_behind(lane_of_three, monkeypatch):
    case_run_id = lane_of_three[0]
    seen: list[list[str]] = []
    real_run_case = native.run_case  # type: ignore[attr-defined]  # the name the attempt calls

    def run_case(*args, **kwargs):
        with TICKER.lock:
            seen.append(sorted(job.name for job in TICKER.jobs.values()))
        return real_run_case(*args, **kwargs)

    monkeypatch.setattr(native, "run_case", run_case)  # the name the attempt calls
    assert pipeline.case_run_execute(case_run_id=case_run_id, score_inline=True) == "completed"
    attempt = CaseRun.objects.get(pk=case_run_id).attempt
    [jobs] = seen
    assert f"attempt-{case_run_id}-{attempt}" in jobs  # the pulse: heartbeat and timed flush
    assert any(name.startswith("case-deadline-") for name in jobs)  # the deadline and cancel watch
    with TICKER.lock:
        left = [job.name for job in TICKER.jobs.values()]
    assert not any(name == f"attempt-{case_run_id}-{attempt}" or name.startswith("case-deadline-") for name in left)


def test_a_hosted_hand_over_runs_under_the_attempts_pulse(workspace, admin, tasks, monkeypatch):
    version = publish(workspace, admin, native_pack_yaml(cases=1))
    run = services.run_create(workspace=workspace, user=admin, pack_version=version, deployment_ids=[hosted_deployment(workspace).pk])
    case_run = CaseRun.objects.get(run=run)
    claim(case_run, attempt=0)  # the worker's claim makes it attempt 1
    CaseRun.objects.filter(pk=case_run.pk).update(status=CaseStatus.QUEUED)
    seen: list[list[str]] = []

    def case_dispatch(endpoint: str, case: dict) -> int:  # the agent accepts the case
        with TICKER.lock:
            seen.append([job.name for job in TICKER.jobs.values()])
        return 202

    monkeypatch.setattr(hosted_attempt, "case_dispatch", case_dispatch)  # the name the attempt calls
    assert pipeline.case_run_execute(case_run_id=case_run.pk) == "dispatched"
    [jobs] = seen
    assert [name for name in jobs if name.startswith(("attempt-", "case-deadline-"))] == [f"attempt-{case_run.pk}-1"]  # no deadline watch
    with TICKER.lock:
        assert f"attempt-{case_run.pk}-1" not in [job.name for job in TICKER.jobs.values()]

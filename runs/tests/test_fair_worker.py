"""Fair scheduling through a real worker (docs/operations.md "Fair scheduling"; the figure is
``bench/fairness.py``'s): while one workspace's big run keeps every worker slot busy, another
workspace's 1-case run goes ahead of the big run's waiting cases instead of behind all of them."""

from __future__ import annotations

import time

import pytest

from runs import services
from runs.models import CaseRun, CaseStatus, Run, RunStatus
from runs.tests.factories import make_deployment, native_pack_yaml, publish
from runs.tests.worker import Worker, wait_for

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]
SLOW = [{"tool": "read_file", "args": {"path": "/workspace/notes.txt"}}] * 3 + [{"submit": "{{last_result}}"}]


def test_a_small_workspace_s_run_overtakes_a_big_one_s_waiting_cases(workspace, admin, other_workspace, stranger, broker_queue):
    big_version = publish(workspace, admin, native_pack_yaml(cases=80, slug="big"))
    small_version = publish(other_workspace, stranger, native_pack_yaml(cases=1, slug="small"))
    big_lane = make_deployment(workspace, name="big", script=SLOW, max_in_flight_cases=150)
    big_lane.deployment_config["latency_ms"] = 40  # every case takes a while, like a model call
    big_lane.save(update_fields=["deployment_config"])
    small_lane = make_deployment(other_workspace, name="small", script=SLOW)
    worker = Worker(queue=broker_queue, concurrency=2).start()
    try:
        big = services.run_create(workspace=workspace, user=admin, pack_version=big_version, deployment_ids=[big_lane.pk])
        assert wait_for(lambda: CaseRun.objects.filter(run=big, status=CaseStatus.COMPLETED).count() >= 4, timeout=120)
        in_flight = CaseRun.objects.filter(run=big, status=CaseStatus.QUEUED, dispatched_at__isnull=False).count()
        assert in_flight <= 32  # the workspace cap (RUNS_WORKSPACE_MAX_IN_FLIGHT), not the profile's 150
        done_before = CaseRun.objects.filter(run=big, status=CaseStatus.COMPLETED).count()
        started = time.monotonic()
        small = services.run_create(workspace=other_workspace, user=stranger, pack_version=small_version, deployment_ids=[small_lane.pk])
        assert wait_for(lambda: Run.objects.get(pk=small.pk).is_terminal, timeout=120, interval=0.05)
        took = time.monotonic() - started
        done_meanwhile = CaseRun.objects.filter(run=big, status=CaseStatus.COMPLETED).count() - done_before
        big_left = CaseRun.objects.filter(run=big, status__in=[CaseStatus.QUEUED, CaseStatus.RUNNING]).count()
    finally:
        worker.stop()
    assert Run.objects.get(pk=small.pk).status == RunStatus.COMPLETED
    assert big_left > 0  # the big run was still going: the small one did not wait for it to end
    # Behind every waiting big case (FIFO) it would have waited for the ~30 dispatched ones first;
    # ahead of them, for the cases already running and a few more at most.
    assert done_meanwhile < 16, (done_meanwhile, took, in_flight)

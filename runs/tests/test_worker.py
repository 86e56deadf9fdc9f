"""Real Celery worker processes against the configured broker and the (file-based) test database."""

from __future__ import annotations

import datetime as dt
import time
from collections import Counter

import pytest

from engine.events import SYSTEM_RUN_COMPLETED
from runs import services
from runs.models import CaseRun, CaseStatus, Run, RunEvent, RunStatus
from runs.tests.factories import make_deployment, native_pack_yaml, publish
from runs.tests.worker import Worker, wait_for

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def _status(run_id: int) -> str:
    return Run.objects.filter(pk=run_id).values_list("status", flat=True).get()


def _assert_events_clean(run: Run) -> None:
    ids = list(RunEvent.objects.filter(run=run).values_list("event_id", flat=True))
    assert len(ids) == len(set(ids))
    for lane in run.lanes.all():
        seqs = list(RunEvent.objects.filter(lane=lane).order_by("sequence_number").values_list("sequence_number", flat=True))
        assert seqs == list(range(1, len(seqs) + 1)), "per-lane sequence has gaps or duplicates"
    for case in CaseRun.objects.filter(run=run):
        finals = RunEvent.objects.filter(case_run=case, attempt=case.attempt, event_type=SYSTEM_RUN_COMPLETED).count()
        assert finals == 1, (case.case_key, case.attempt, finals)


def test_a_real_worker_runs_a_pack_end_to_end(workspace, admin, broker_queue):
    version = publish(workspace, admin, native_pack_yaml(cases=4))
    lanes = [make_deployment(workspace, name="a").pk, make_deployment(workspace, name="b").pk]
    worker = Worker(queue=broker_queue).start()
    try:
        run = services.run_create(workspace=workspace, user=admin, pack_version=version, deployment_ids=lanes)
        assert wait_for(lambda: Run.objects.get(pk=run.pk).is_terminal, timeout=120), _status(run.pk)
    finally:
        worker.stop()
    run.refresh_from_db()
    assert run.status == RunStatus.COMPLETED, run.failure_reason
    assert set(CaseRun.objects.filter(run=run).values_list("status", flat=True)) == {CaseStatus.COMPLETED}
    _assert_events_clean(run)


def test_killing_a_worker_mid_run_loses_and_duplicates_nothing(workspace, admin, broker_queue):
    version = publish(workspace, admin, native_pack_yaml(cases=40))
    slow = [{"tool": "read_file", "args": {"path": "/workspace/notes.txt"}}] * 6 + [{"submit": "{{last_result}}"}]
    lanes = [
        make_deployment(workspace, name="a", script=slow, max_in_flight_cases=3).pk,
        make_deployment(workspace, name="b", script=slow, max_in_flight_cases=3).pk,
    ]
    first = Worker(queue=broker_queue).start()
    try:
        run = services.run_create(workspace=workspace, user=admin, pack_version=version, deployment_ids=lanes)
        assert wait_for(lambda: CaseRun.objects.filter(run=run, status=CaseStatus.COMPLETED).count() >= 6, timeout=120)
    finally:
        first.kill()
    done_at_kill = CaseRun.objects.filter(run=run, status=CaseStatus.COMPLETED).count()
    assert done_at_kill < 80, "the run finished before the kill; make the cases slower"
    time.sleep(1.5)
    # The beat reaper's job, with short thresholds: re-queue cases whose worker died.
    services.run_reap(stale_after=dt.timedelta(seconds=1), lost_after=dt.timedelta(seconds=1))
    second = Worker(queue=broker_queue).start()
    try:

        def finished() -> bool:
            if Run.objects.get(pk=run.pk).is_terminal:
                return True
            services.run_reap(stale_after=dt.timedelta(seconds=20), lost_after=dt.timedelta(seconds=20))
            return False

        assert wait_for(finished, timeout=180, interval=1.0), Counter(CaseRun.objects.filter(run=run).values_list("status", flat=True))
    finally:
        second.stop()
    run.refresh_from_db()
    assert run.status == RunStatus.COMPLETED, run.failure_reason
    assert CaseRun.objects.filter(run=run, status=CaseStatus.COMPLETED).count() == 80
    _assert_events_clean(run)

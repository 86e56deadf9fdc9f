"""Nothing lost (docs/operations.md "Nothing lost, nothing stuck"): the database is the outbox, and
``runs.run_redispatch`` sends again, within seconds, a run start or a case message the broker lost
or never got; a copy of a message that was not lost is a no-op."""

from __future__ import annotations

import datetime as dt

import pytest
from django.utils import timezone

from runs import pipeline, services
from runs.models import CaseRun, CaseStatus, Run, RunStatus
from runs.tests.factories import make_deployment, native_pack_yaml, publish

pytestmark = pytest.mark.django_db
LATER = dt.timedelta(seconds=30)


def _create(workspace, admin, tasks, cases: int = 3) -> Run:
    version = publish(workspace, admin, native_pack_yaml(cases=cases))
    run = services.run_create(workspace=workspace, user=admin, pack_version=version, deployment_ids=[make_deployment(workspace).pk])
    tasks.items.clear()  # the messages are lost (a broker restart, or a web process killed before the publish)
    return run


def test_a_queued_run_whose_start_was_lost_is_started_again_once(workspace, admin, tasks):
    run = _create(workspace, admin, tasks)
    assert services.run_redispatch() == {"runs": 0, "cases": 0}  # too recent: its message may still be on its way
    later = timezone.now() + LATER
    assert services.run_redispatch(now=later) == {"runs": 1, "cases": 0}
    assert services.run_redispatch(now=later) == {"runs": 0, "cases": 0}  # sent once per period, not per sweep
    assert tasks.items == [("runs.run_start", (run.pk,), {"countdown": None})]
    tasks.drain()
    run.refresh_from_db()
    assert run.status == RunStatus.COMPLETED


def test_a_dispatched_case_whose_message_was_lost_is_sent_again_and_a_duplicate_is_a_no_op(workspace, admin, tasks):
    run = _create(workspace, admin, tasks)
    services.run_start(run_id=run.pk)
    sent = [args[0] for name, args, _ in tasks.items if name == "runs.case_run_execute"]
    assert len(sent) == 3
    tasks.items.clear()  # every case message lost
    report = services.run_redispatch(now=timezone.now() + LATER)
    assert report == {"runs": 0, "cases": 3}
    resent = [args[0] for name, args, _ in tasks.items if name == "runs.case_run_execute"]
    assert sorted(resent) == sorted(sent)
    tasks.drain()
    pipeline.case_run_execute(case_run_id=sent[0])  # the original message arriving late after all: a no-op
    assert len(tasks.items) == 0
    run.refresh_from_db()
    assert run.status == RunStatus.COMPLETED
    assert set(CaseRun.objects.filter(run=run).values_list("attempt", flat=True)) == {1}  # each case ran once


def test_a_running_case_and_a_finished_run_are_left_alone(workspace, admin, tasks):
    run = _create(workspace, admin, tasks, cases=1)
    services.run_start(run_id=run.pk)
    tasks.drain()
    run.refresh_from_db()
    assert run.status == RunStatus.COMPLETED
    assert services.run_redispatch(now=timezone.now() + LATER) == {"runs": 0, "cases": 0}
    CaseRun.objects.filter(run=run).update(status=CaseStatus.RUNNING)
    Run.objects.filter(pk=run.pk).update(status=RunStatus.RUNNING)
    assert services.run_redispatch(now=timezone.now() + LATER) == {"runs": 0, "cases": 0}  # running: the reaper's (heartbeat)

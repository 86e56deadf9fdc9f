"""The reaper never runs a case past its attempt bound (issue 14: a case that kills its worker)."""

from __future__ import annotations

import datetime as dt

import pytest
from django.utils import timezone

from runs import services
from runs.models import CaseRun, CaseStatus
from runs.pipeline.context import MAX_ATTEMPTS
from runs.tests.factories import make_deployment


@pytest.fixture
def run_of(workspace, admin, pack_version):
    def create(deployment):
        return services.run_create(workspace=workspace, user=admin, pack_version=pack_version, deployment_ids=[deployment.pk])

    return create


@pytest.mark.django_db
def test_the_reaper_fails_a_stale_case_at_its_last_attempt_instead_of_requeueing_it(workspace, run_of, tasks):
    run = run_of(make_deployment(workspace))
    tasks.items.clear()
    services.run_start(run_id=run.pk)
    tasks.items.clear()  # the case messages are lost with their worker
    stuck = CaseRun.objects.filter(run=run).order_by("position").first()
    old = timezone.now() - dt.timedelta(minutes=5)
    CaseRun.objects.filter(pk=stuck.pk).update(status=CaseStatus.RUNNING, attempt=MAX_ATTEMPTS, heartbeat_at=old)
    report = services.run_reap()
    assert report["requeued"] == 0 and report["abandoned"] == 1
    assert not [t for t in tasks.items if t[0] == "runs.case_run_execute" and t[1][0] == stuck.pk]
    stuck.refresh_from_db()
    assert (stuck.status, stuck.stop_reason, stuck.attempt) == (CaseStatus.FAILED, "sandbox_error", MAX_ATTEMPTS)
    assert "stopped responding" in stuck.error

from __future__ import annotations

import datetime as dt

import pytest
from django.utils import timezone

from runs import services
from runs.lifecycle import InvalidTransition, case_claim, lane_transition, run_transition
from runs.models import CaseRun, CaseStatus, LaneStatus, LaneStatusHistory, Run, RunStatus, RunStatusHistory


@pytest.fixture
def run(workspace, admin, pack_version, deployment):
    return services.run_create(workspace=workspace, user=admin, pack_version=pack_version, deployment_ids=[deployment.pk])


@pytest.mark.django_db
def test_allowed_run_transitions_write_history_and_timestamps(run, admin):
    assert run_transition(run_id=run.pk, to=RunStatus.PROVISIONING)
    assert run_transition(run_id=run.pk, to=RunStatus.RUNNING)
    assert run_transition(run_id=run.pk, to=RunStatus.CANCELLED, reason="cancelled by user", user=admin)
    run.refresh_from_db()
    assert run.status == RunStatus.CANCELLED and run.started_at and run.finished_at and run.cancelled_at
    history = list(RunStatusHistory.objects.filter(run=run).values_list("from_status", "to_status"))
    assert history == [("draft", "queued"), ("queued", "provisioning"), ("provisioning", "running"), ("running", "cancelled")]
    assert RunStatusHistory.objects.filter(run=run).last().changed_by == admin


@pytest.mark.django_db
@pytest.mark.parametrize("to", [RunStatus.RUNNING, RunStatus.SCORING, RunStatus.COMPLETED, RunStatus.DRAFT])
def test_it_refuses_transitions_the_table_does_not_allow(run, to):
    with pytest.raises(InvalidTransition):
        run_transition(run_id=run.pk, to=to)
    assert Run.objects.get(pk=run.pk).status == RunStatus.QUEUED


@pytest.mark.django_db
def test_a_lost_race_returns_false_without_history(run):
    assert not run_transition(run_id=run.pk, to=RunStatus.RUNNING, expected=RunStatus.PROVISIONING)
    assert RunStatusHistory.objects.filter(run=run).count() == 1


@pytest.mark.django_db
def test_a_terminal_run_stays_terminal(run):
    run_transition(run_id=run.pk, to=RunStatus.FAILED, reason="boom")
    assert not run_transition(run_id=run.pk, to=RunStatus.CANCELLED)
    run.refresh_from_db()
    assert run.failure_reason == "boom" and run.failed_at


@pytest.mark.django_db
def test_lane_transitions_follow_the_table(run):
    lane = run.lanes.get()
    with pytest.raises(InvalidTransition):
        lane_transition(lane_id=lane.pk, to=LaneStatus.COMPLETED)
    assert lane_transition(lane_id=lane.pk, to=LaneStatus.READY)
    assert lane_transition(lane_id=lane.pk, to=LaneStatus.FAILED, reason="no credentials")
    lane.refresh_from_db()
    assert lane.failure_reason == "no credentials" and lane.finished_at
    assert LaneStatusHistory.objects.filter(lane=lane).count() == 2


@pytest.mark.django_db
def test_a_case_is_claimed_once(run):
    case = CaseRun.objects.filter(run=run).first()
    claimed = case_claim(case_run_id=case.pk)
    assert claimed.status == CaseStatus.RUNNING and claimed.attempt == 1
    assert case_claim(case_run_id=case.pk) is None
    # fresh heartbeat: not stale yet
    assert case_claim(case_run_id=case.pk, stale_before=timezone.now() - dt.timedelta(seconds=60)) is None
    CaseRun.objects.filter(pk=case.pk).update(heartbeat_at=timezone.now() - dt.timedelta(minutes=5))
    again = case_claim(case_run_id=case.pk, stale_before=timezone.now() - dt.timedelta(seconds=60))
    assert again.attempt == 2

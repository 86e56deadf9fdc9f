"""Cancel is clean in every phase (docs/runs.md "Cancel"): queued, provisioning (also when the
cancel interleaves with the worker's start), running; a scoring run is not cancelled, it completes."""

from __future__ import annotations

import pytest

from core.errors import Conflict
from runs import lifecycle, services
from runs.models import LANE_TERMINAL, CaseRun, CaseStatus, Lane, LaneStatus, Run, RunStatus
from runs.services import orchestrate
from runs.tests.factories import make_deployment, native_pack_yaml, publish

pytestmark = pytest.mark.django_db


@pytest.fixture
def run(workspace, admin, tasks):
    version = publish(workspace, admin, native_pack_yaml(cases=4))
    lanes = [make_deployment(workspace, name="a").pk, make_deployment(workspace, name="b").pk]
    created = services.run_create(workspace=workspace, user=admin, pack_version=version, deployment_ids=lanes)
    tasks.items.clear()
    return created


def _nothing_open(run: Run) -> None:
    run.refresh_from_db()
    assert run.status == RunStatus.CANCELLED
    assert set(Lane.objects.filter(run=run).values_list("status", flat=True)) <= set(LANE_TERMINAL)
    assert not CaseRun.objects.filter(run=run, status=CaseStatus.QUEUED).exists()


def test_cancel_while_queued(run, admin, tasks):
    services.run_cancel(run=run, user=admin)
    assert services.run_start(run_id=run.pk) is False  # its start message arriving late: a no-op
    _nothing_open(run)


@pytest.mark.parametrize("after", [LaneStatus.READY, LaneStatus.EXECUTING])
def test_cancel_interleaved_with_the_start_leaves_no_lane_or_case_open(run, admin, tasks, monkeypatch, after):
    """The cancel lands while the worker moves the lanes: after the first lane's move to ``after``."""
    real = orchestrate.lane_transition
    fired: list[bool] = []

    def moving(**kwargs):
        moved = real(**kwargs)
        if kwargs["to"] == after and not fired:
            fired.append(True)
            services.run_cancel(run=Run.objects.get(pk=run.pk), user=admin)
        return moved

    monkeypatch.setattr(orchestrate, "lane_transition", moving)
    services.run_start(run_id=run.pk)
    assert fired
    _nothing_open(run)
    assert not [item for item in tasks.items if item[0] == "runs.case_run_execute"]  # nothing dispatched


def test_the_cancel_ends_a_lane_that_a_worker_moved_after_the_cancel_read_it(run, admin, monkeypatch):
    Run.objects.filter(pk=run.pk).update(status=RunStatus.PROVISIONING)
    lane = Lane.objects.filter(run=run).first()
    real = lifecycle.lane_transition
    raced: list[bool] = []

    def racing(**kwargs):
        if kwargs["lane_id"] == lane.pk and not raced:  # the worker moves the lane first: the cancel's CAS loses once
            raced.append(True)
            real(lane_id=lane.pk, to=LaneStatus.READY, expected=LaneStatus.QUEUED)
        return real(**kwargs)

    monkeypatch.setattr(lifecycle, "lane_transition", racing)
    services.run_cancel(run=run, user=admin)
    assert raced
    lane.refresh_from_db()
    assert lane.status == LaneStatus.CANCELLED


def test_cancel_while_running_then_the_cases_in_flight_end_cancelled(run, admin, tasks):
    services.run_start(run_id=run.pk)
    services.run_cancel(run=Run.objects.get(pk=run.pk), user=admin)
    tasks.drain()
    _nothing_open(run)
    assert not CaseRun.objects.filter(run=run, status=CaseStatus.RUNNING).exists()
    assert CaseRun.objects.filter(run=run, status=CaseStatus.COMPLETED).count() == 0


def test_a_scoring_run_is_not_cancelled_it_completes(run, admin, tasks):
    services.run_start(run_id=run.pk)
    tasks.drain()
    Run.objects.filter(pk=run.pk).update(status=RunStatus.SCORING)  # caught between its last lane and its scorecard
    with pytest.raises(Conflict, match=r"scoring \(every case has finished"):
        services.run_cancel(run=Run.objects.get(pk=run.pk), user=admin)
    orchestrate.run_advance(run_id=run.pk)
    run.refresh_from_db()
    assert run.status == RunStatus.COMPLETED

"""Fair scheduling (docs/operations.md "Fair scheduling"): the operator's ceiling on a lane's
in-flight cases, the workspace's in-flight cap shared least-served first, and the broker priority
that lets a workspace's first case overtake a busy workspace's waiting ones."""

from __future__ import annotations

import itertools

import pytest

from runs import pipeline, services
from runs.models import CaseRun, CaseStatus
from runs.pipeline.advance import case_priority
from runs.tests.factories import make_deployment, native_pack_yaml, publish

pytestmark = pytest.mark.django_db


def _dispatched(run) -> int:
    return CaseRun.objects.filter(run=run, status=CaseStatus.QUEUED, dispatched_at__isnull=False).count()


def _sent(tasks) -> list[tuple[int, int]]:
    """(case run id, priority) of every case_run_execute captured, in publish order."""
    return [(args[0], options.get("priority", 0)) for name, args, options in tasks.items if name == "runs.case_run_execute"]


_slugs = itertools.count()


def _start(workspace, user, tasks, *, cases: int, in_flight: int, lanes: int = 1):
    version = publish(workspace, user, native_pack_yaml(cases=cases, slug=f"fair-{next(_slugs)}"))
    deployments = [make_deployment(workspace, max_in_flight_cases=in_flight).pk for _ in range(lanes)]
    run = services.run_create(workspace=workspace, user=user, pack_version=version, deployment_ids=deployments)
    start = next(item for item in tasks.items if item[0] == "runs.run_start" and item[1] == (run.pk,))
    tasks.items.remove(start)
    services.run_start(run_id=run.pk)
    return run


def _finish_one(tasks, run) -> None:
    """Run one of ``run``'s dispatched cases to its end (its finish refills the workspace's slots)."""
    ids = set(CaseRun.objects.filter(run=run).values_list("pk", flat=True))
    item = next(i for i in tasks.items if i[0] == "runs.case_run_execute" and i[1][0] in ids)
    tasks.items.remove(item)
    assert pipeline.case_run_execute(case_run_id=item[1][0], score_inline=True) == "completed"


def test_the_operator_ceiling_caps_a_lane_above_it(workspace, admin, tasks, settings):
    settings.RUNS_MAX_IN_FLIGHT_CEILING = 3
    settings.RUNS_WORKSPACE_MAX_IN_FLIGHT = 0
    run = _start(workspace, admin, tasks, cases=10, in_flight=150)
    assert _dispatched(run) == 3
    _finish_one(tasks, run)
    assert _dispatched(run) == 3  # one finished, one more went: never more than the ceiling


def test_the_workspace_cap_holds_across_runs_and_the_next_slot_goes_to_the_least_served_run(workspace, admin, tasks, settings):
    settings.RUNS_WORKSPACE_MAX_IN_FLIGHT = 4
    big = _start(workspace, admin, tasks, cases=12, in_flight=8, lanes=2)
    assert _dispatched(big) == 4  # two lanes of 8 each, capped at 4 for the workspace ...
    per_lane = sorted(CaseRun.objects.filter(run=big, dispatched_at__isnull=False).values_list("lane_id", flat=True))
    assert len(set(per_lane)) == 2 and per_lane.count(per_lane[0]) == 2  # ... shared 2 and 2
    small = _start(workspace, admin, tasks, cases=4, in_flight=8)
    assert _dispatched(small) == 0  # the workspace is full: the new run waits ...
    _finish_one(tasks, big)
    assert (_dispatched(big), _dispatched(small)) == (3, 1)  # ... for the next free slot, which goes to it (none in flight)
    for _ in range(5):  # from then on the slots stay shared: no lane more than one ahead of another
        _finish_one(tasks, big)
        loads = _in_flight_per_lane(big) + _in_flight_per_lane(small)
        assert sum(loads) == 4 and max(loads) - min(loads) <= 1, loads


def _in_flight_per_lane(run) -> list[int]:
    return [_dispatched_lane(lane) for lane in run.lanes.all()]


def _dispatched_lane(lane) -> int:
    return CaseRun.objects.filter(lane=lane, status=CaseStatus.QUEUED, dispatched_at__isnull=False).count()


def test_a_lane_left_waiting_by_the_cap_is_dispatched_when_another_lane_finishes(workspace, admin, tasks, settings):
    settings.RUNS_WORKSPACE_MAX_IN_FLIGHT = 1
    first = _start(workspace, admin, tasks, cases=1, in_flight=8)
    second = _start(workspace, admin, tasks, cases=1, in_flight=8)
    assert (_dispatched(first), _dispatched(second)) == (1, 0)
    _finish_one(tasks, first)  # its lane is done; its finish hands the slot to the other run's lane
    assert _dispatched(second) == 1
    _finish_one(tasks, second)
    first.refresh_from_db(), second.refresh_from_db()
    assert (first.is_terminal, second.is_terminal) == (True, True)


def test_another_workspace_is_not_held_by_this_workspace_s_cap(workspace, admin, other_workspace, stranger, tasks, settings):
    settings.RUNS_WORKSPACE_MAX_IN_FLIGHT = 2
    busy = _start(workspace, admin, tasks, cases=6, in_flight=8)
    other = _start(other_workspace, stranger, tasks, cases=3, in_flight=8)
    assert (_dispatched(busy), _dispatched(other)) == (2, 2)


def test_a_busy_workspace_s_cases_go_out_behind_a_new_workspace_s_first_case(workspace, admin, other_workspace, stranger, tasks, settings):
    settings.RUNS_WORKSPACE_MAX_IN_FLIGHT = 32
    busy = _start(workspace, admin, tasks, cases=30, in_flight=20)
    busy_priorities = [priority for _, priority in _sent(tasks)]
    assert busy_priorities == [case_priority(n) for n in range(20)]  # 0 0 3 3 3 3 3 3 6 …: falls as the workspace fills
    assert busy_priorities[-1] == 6
    tasks.items.clear()
    small = _start(other_workspace, stranger, tasks, cases=1, in_flight=8)
    assert [priority for _, priority in _sent(tasks)] == [0]  # goes ahead of every waiting busy case
    tasks.items.clear()
    assert _finish_one_from_db(busy) == "completed"
    refill = _sent(tasks)
    assert len(refill) == 1 and refill[0][1] == case_priority(19)  # the busy workspace's refill stays behind
    del small


def _finish_one_from_db(run) -> str:
    case_run_id = CaseRun.objects.filter(run=run, dispatched_at__isnull=False, status=CaseStatus.QUEUED).values_list("pk", flat=True)[0]
    return pipeline.case_run_execute(case_run_id=case_run_id, score_inline=True)


def test_case_priority_falls_in_steps_the_redis_broker_keeps():
    assert [case_priority(n) for n in (0, 1, 2, 7, 8, 31, 32, 10_000)] == [0, 0, 3, 3, 6, 6, 9, 9]


def test_cancelling_a_run_hands_its_slots_to_the_workspace_s_waiting_run_at_once(workspace, admin, tasks, settings):
    settings.RUNS_WORKSPACE_MAX_IN_FLIGHT = 3
    big = _start(workspace, admin, tasks, cases=10, in_flight=8)
    waiting = _start(workspace, admin, tasks, cases=5, in_flight=8)
    assert (_dispatched(big), _dispatched(waiting)) == (3, 0)
    services.run_cancel(run=big, user=admin)  # its dispatched cases never run: no finish would free their slots
    assert _dispatched(waiting) == 3


def test_a_lane_that_fails_fast_hands_its_slots_on(workspace, admin, tasks, settings):
    settings.RUNS_WORKSPACE_MAX_IN_FLIGHT = 2
    version = publish(workspace, admin, native_pack_yaml(cases=4, slug=f"fair-{next(_slugs)}"))
    broken = make_deployment(workspace, provider_key="no-such-provider", max_in_flight_cases=8)
    run = services.run_create(workspace=workspace, user=admin, pack_version=version, deployment_ids=[broken.pk])
    tasks.items.clear()
    services.run_start(run_id=run.pk)
    waiting = _start(workspace, admin, tasks, cases=3, in_flight=8)
    assert (_dispatched(run), _dispatched(waiting)) == (2, 0)
    assert _finish_one_from_db(run) == "failed"  # fails: its lane's other cases fail with it, without running
    assert _dispatched(waiting) == 2

"""Chained cases: the ``runs.case_run_execute`` task runs the lane's next cases itself
(``RUNS_CASE_CHAIN``) and sends whatever is left through the broker."""

from __future__ import annotations

import pytest

from runs import pipeline, queue, services
from runs import tasks as task_functions
from runs.jobs import CaseRunExecute, CaseRunFinalize
from runs.models import CaseRun, CaseStatus, RunStatus
from runs.tests.factories import make_deployment, native_pack_yaml, publish


@pytest.fixture(autouse=True)
def no_connection_refresh(monkeypatch):
    """The task's per-task connection check would close the test's transaction on PostgreSQL
    (it drops a connection that is not in autocommit); it is not what these tests are about."""
    monkeypatch.setattr(task_functions, "db_fresh", lambda: None)


@pytest.fixture
def lane_of_five(workspace, admin, tasks):
    """A run of five cases on one lane that runs one case at a time; run_start drained."""
    version = publish(workspace, admin, native_pack_yaml(cases=5))
    deployment = make_deployment(workspace, name="chained", max_in_flight_cases=1)
    run = services.run_create(workspace=workspace, user=admin, pack_version=version, deployment_ids=[deployment.pk])
    tasks.drain(limit=1)  # run_start: dispatches the first case only
    sent = [args[0] for name, args, _ in tasks.items if name == queue.CASE_TASK]
    assert len(sent) == 1
    tasks.items.clear()
    return run, sent[0]


def completed(run) -> int:
    return CaseRun.objects.filter(run=run, status=CaseStatus.COMPLETED).count()


def sent_cases(captured) -> list[int]:
    return [args[0] for name, args, _ in captured.items if name == queue.CASE_TASK]


@pytest.mark.django_db
def test_one_task_runs_the_whole_lane_when_the_chain_allows(lane_of_five, tasks, settings, monkeypatch):
    run, first = lane_of_five
    settings.RUNS_CASE_CHAIN = 16
    monkeypatch.setattr(task_functions, "CHAIN_SECONDS", 60.0)  # the length decides here, not a loaded machine's clock
    task_functions.case_run_execute(first)
    assert completed(run) == 5
    assert sent_cases(tasks) == []  # nothing went through the broker
    tasks.drain()  # the finalize/advance work the last case left
    run.refresh_from_db()
    assert run.status in (RunStatus.COMPLETED, RunStatus.SCORING)


@pytest.mark.django_db
@pytest.mark.parametrize("chain", [1, 2, 3])
def test_the_chain_stops_at_its_length_and_sends_the_next_case(lane_of_five, tasks, settings, chain, monkeypatch):
    run, first = lane_of_five
    settings.RUNS_CASE_CHAIN = chain
    monkeypatch.setattr(task_functions, "CHAIN_SECONDS", 60.0)
    task_functions.case_run_execute(first)
    assert completed(run) == chain
    following = sent_cases(tasks)
    assert len(following) == 1 and CaseRun.objects.get(pk=following[0]).status == CaseStatus.QUEUED


@pytest.mark.django_db
def test_the_chain_starts_no_case_after_its_time_budget(lane_of_five, tasks, settings, monkeypatch):
    run, first = lane_of_five
    settings.RUNS_CASE_CHAIN = 16
    monkeypatch.setattr(task_functions, "CHAIN_SECONDS", -1.0)
    task_functions.case_run_execute(first)
    assert completed(run) == 1
    assert len(sent_cases(tasks)) == 1


@pytest.mark.django_db
def test_a_case_that_raises_sends_the_kept_case_through_the_broker(lane_of_five, tasks, settings, monkeypatch):
    run, first = lane_of_five
    settings.RUNS_CASE_CHAIN = 16
    real = pipeline.case_run_execute
    calls: list[int] = []

    def flaky(*, case_run_id, **kwargs):
        calls.append(case_run_id)
        if len(calls) == 2:
            raise RuntimeError("database went away")
        return real(case_run_id=case_run_id, **kwargs)

    monkeypatch.setattr(task_functions.pipeline, "case_run_execute", flaky)
    with pytest.raises(RuntimeError):
        task_functions.case_run_execute(first)
    assert completed(run) == 1
    assert sent_cases(tasks) == [calls[1]]  # the case that was about to run is sent again
    monkeypatch.setattr(task_functions.pipeline, "case_run_execute", real)
    tasks.drain_inline()
    assert completed(run) == 5


@pytest.mark.django_db
def test_a_cancelled_run_stops_the_chain(lane_of_five, tasks, settings, admin, monkeypatch):
    run, first = lane_of_five
    settings.RUNS_CASE_CHAIN = 16
    real = pipeline.case_run_execute
    done: list[str] = []

    def cancel_after_first(*, case_run_id, **kwargs):
        result = real(case_run_id=case_run_id, **kwargs)
        done.append(result)
        if len(done) == 1:
            services.run_cancel(run=run, user=admin)
        return result

    monkeypatch.setattr(task_functions.pipeline, "case_run_execute", cancel_after_first)
    task_functions.case_run_execute(first)
    assert completed(run) == 1
    assert len(done) <= 2 and all(result != "completed" for result in done[1:])


def test_only_the_first_case_task_is_kept(monkeypatch):
    published: list[tuple[str, tuple, dict]] = []
    monkeypatch.setattr(queue, "_capture", published)
    with queue.keep_next_case() as kept:
        queue.enqueue(CaseRunExecute(case_run_id=7))
        queue.enqueue(CaseRunExecute(case_run_id=8))
        queue.enqueue(CaseRunFinalize(case_run_id=7))
        queue.enqueue(CaseRunExecute(case_run_id=9, stale_seconds=30.0))  # a reaper's re-queue with arguments: never kept
    assert kept == [7]
    assert [(name, args) for name, args, _ in published] == [
        (queue.CASE_TASK, (8,)),
        ("runs.case_run_finalize", (7,)),
        (queue.CASE_TASK, (9, None, 30.0)),
    ]
    queue.enqueue(CaseRunExecute(case_run_id=10))  # outside: published
    assert published[-1][1] == (10,)


def test_another_thread_never_has_its_case_kept(monkeypatch):
    import threading

    published: list[tuple[str, tuple, dict]] = []
    monkeypatch.setattr(queue, "_capture", published)
    with queue.keep_next_case() as kept:
        other = threading.Thread(target=queue.enqueue, args=(CaseRunExecute(case_run_id=5),))
        other.start()
        other.join()
        queue.enqueue(CaseRunExecute(case_run_id=6))
    assert kept == [6] and [args for _, args, _ in published] == [(5,)]


def test_a_kept_case_keeps_the_priority_its_dispatch_gave_it(monkeypatch):
    """Sent through the broker when the chain stops, it goes at that priority, not ahead of others."""
    with queue.keep_next_case() as kept:
        queue.enqueue(CaseRunExecute(case_run_id=7), priority=6)
    assert kept == [7] and queue.kept_priority() == 6

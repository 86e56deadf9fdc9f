"""Runs tests drive tasks synchronously: enqueued tasks are captured and drained in-process."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from regression.tests.factories import failing_deployment, finished_run, suite_for
from runs import pipeline, queue, services
from runs.pipeline.hosted.finish import hosted_case_deadline
from runs.tests.factories import make_deployment, native_pack_yaml, publish
from runs.tests.worker import Worker

TASKS: dict[str, Callable[..., object]] = {
    "runs.run_start": lambda run_id: services.run_start(run_id=run_id),
    "runs.case_run_execute": lambda case_run_id, retry_of=None, stale_seconds=None: pipeline.case_run_execute(
        case_run_id=case_run_id, retry_of=retry_of, stale_seconds=stale_seconds
    ),
    "runs.case_run_finalize": lambda case_run_id: pipeline.case_run_finalize(case_run_id=case_run_id),
    "runs.case_run_deadline": lambda case_run_id, attempt: hosted_case_deadline(case_run_id=case_run_id, attempt=attempt),
    "runs.run_round_advance": lambda run_id: pipeline.run_round_advance(run_id=run_id),
    "runs.run_reap": lambda: services.run_reap(),
    "runs.run_redispatch": lambda: services.run_redispatch(),
}


class TaskQueue:
    def __init__(self) -> None:
        self.items: list[tuple[str, tuple, dict]] = []

    def names(self) -> list[str]:
        return [name for name, _, _ in self.items]

    def drain(self, *, limit: int = 10_000, skip: set[str] | None = None) -> int:
        """Run queued tasks (and whatever they enqueue) until none are left."""
        done = 0
        while self.items and done < limit:
            name, args, _ = self.items.pop(0)
            if skip and name in skip:
                continue
            TASKS[name](*args)
            done += 1
        return done

    def drain_inline(self) -> None:
        """Drain the way the worker does with inline scoring: each case is scored as it finishes."""
        while self.items:
            name, args, _ = self.items.pop(0)
            if name == "runs.case_run_execute":
                pipeline.case_run_execute(case_run_id=args[0], retry_of=args[1] if len(args) > 1 else None, score_inline=True)
            else:
                TASKS[name](*args)


@pytest.fixture(autouse=True)
def tasks(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.RUNS_RETRY_BACKOFF_SECONDS = 0
    captured = TaskQueue()
    queue.capture(captured.items)
    yield captured
    queue.capture(None)


@pytest.fixture
def pack_version(workspace, admin):
    return publish(workspace, admin, native_pack_yaml(cases=3))


@pytest.fixture
def deployment(workspace):
    return make_deployment(workspace, name="reader")


@pytest.fixture
def failed_run(workspace, admin, pack_version, tasks):
    """A finished run of ``pack_version`` whose one lane answers every case wrong (regression tests)."""
    return finished_run(workspace, admin, pack_version, failing_deployment(workspace), tasks)


@pytest.fixture
def suite(workspace, admin, pack_version):
    """A regression suite "smoke" for ``pack_version``'s pack."""
    return suite_for(workspace, admin, pack_version)


@pytest.fixture
def broker_queue():
    """A private broker queue that ``services`` enqueue to; the test starts ``Worker(queue=broker_queue)``."""
    queue.capture(None)  # the autouse ``tasks`` fixture captures in-process; these tests want the broker
    worker_queue = Worker().queue
    queue.use_queue(worker_queue)
    yield worker_queue
    queue.use_queue(None)


@pytest.fixture
def worker():
    """A Celery worker on a private queue (started by the test); web requests enqueue there."""
    queue.capture(None)  # the autouse ``tasks`` fixture captures in-process; these tests want the broker
    process = Worker(concurrency=2)
    queue.use_queue(process.queue)
    yield process
    process.stop()
    queue.use_queue(None)

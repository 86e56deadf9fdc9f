"""Runs tests drive tasks synchronously: enqueued tasks are captured and drained in-process."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from runs import queue, services
from runs.tests.factories import make_deployment, native_pack_yaml, publish

TASKS: dict[str, Callable[..., object]] = {
    "runs.run_start": lambda run_id: services.run_start(run_id=run_id),
    "runs.case_run_execute": lambda case_run_id, retry_of=None, stale_seconds=None: services.case_run_execute(
        case_run_id=case_run_id, retry_of=retry_of, stale_seconds=stale_seconds
    ),
    "runs.case_run_finalize": lambda case_run_id: services.case_run_finalize(case_run_id=case_run_id),
    "runs.run_reap": lambda: services.run_reap(),
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

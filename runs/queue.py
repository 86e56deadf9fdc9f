"""Enqueueing run tasks: services call :func:`enqueue_on_commit` with a typed job (``runs/jobs.py``).

A task enqueued from inside another task goes to the queue that task came from, so a run started
on a dedicated queue (tests, the benchmark, a tenant's own workers) stays on it. Tests swap the
transport for a list with :func:`capture` and drain it synchronously.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Iterator
from typing import Any

from runs.jobs import CaseRunExecute, Job

_capture: list[tuple[str, tuple[Any, ...], dict[str, Any]]] | None = None
_default_queue: str | None = None
log = logging.getLogger(__name__)
_local = threading.local()  # .kept: see keep_next_case (per thread: only the task's own thread keeps)
CASE_TASK = CaseRunExecute.task_name


@contextlib.contextmanager
def keep_next_case() -> Iterator[list[Any]]:
    """Inside (in this thread): the first ``runs.case_run_execute`` enqueued (a finish's refill
    picking the lane's next case) is appended to the yielded list instead of being published, for
    the calling task to run next in this process (``runs/tasks.py``); every other task, and
    anything another thread enqueues meanwhile, is published as usual."""
    outer = getattr(_local, "kept", None)
    kept: list[Any] = []
    _local.kept = kept
    try:
        yield kept
    finally:
        _local.kept = outer


def kept_priority() -> int:
    """The broker priority the dispatch gave the case a chain kept last (0 when none was kept)."""
    return int(getattr(_local, "kept_priority", 0))


def waiting_ahead() -> bool:
    """Whether the broker holds a message for this task's queue that would go before the case a
    chain kept (a lower priority number: another workspace's first cases, a run's start); the
    chain then stops and sends its case through the broker, behind it (fair scheduling,
    docs/operations.md). False when the broker cannot tell, or for a kept case of priority 0."""
    priority = kept_priority()
    if priority <= 0 or _capture is not None:
        return False
    from celery import current_app

    queue = _current_queue() or _default_queue or current_app.conf.task_default_queue
    try:
        with current_app.pool.acquire(block=True, timeout=1) as connection:
            check = getattr(connection.default_channel, "waiting_ahead", None)
            return bool(check and check(queue, priority))
    except Exception:  # the broker is unreachable: the chain's own deadline decides
        log.debug("could not ask the broker what waits ahead", exc_info=True)
        return False


def use_queue(name: str | None) -> None:
    """Send tasks enqueued outside a task (web requests, the reaper) to ``name`` (None = Celery's default)."""
    global _default_queue
    _default_queue = name


def capture(into: list | None) -> None:
    """Send tasks into ``into`` instead of the broker (None restores the broker)."""
    global _capture
    _capture = into


def _current_queue() -> str | None:
    from celery import current_task

    request = getattr(current_task, "request", None) if current_task else None
    info = getattr(request, "delivery_info", None) or {}
    return info.get("routing_key") or None


def enqueue(job: Job, *, countdown: float | None = None, priority: int | None = None) -> None:
    """Send ``job`` to the broker now (services use :func:`enqueue_on_commit`).

    ``priority``: the broker priority, 0 (first) to 9 (last); None is 0. Both brokers take a
    lower number first and keep publish order within one (``agentclash/broker.py``)."""
    args = job.args()
    kept = getattr(_local, "kept", None)
    if kept is not None and not kept and isinstance(job, CaseRunExecute) and job.is_plain and not countdown:
        kept.append(job.case_run_id)
        _local.kept_priority = priority or 0
        return
    if _capture is not None:
        _capture.append((job.task_name, args, {"countdown": countdown} | ({"priority": priority} if priority is not None else {})))
        return
    from celery import current_app

    queue = _current_queue() or _default_queue
    options: dict[str, Any] = {"queue": queue} if queue else {}  # no queue: where Celery routes the task
    if countdown:  # a retry's delayed attempt
        options["countdown"] = countdown
    if priority:
        options["priority"] = priority
    current_app.send_task(job.task_name, args=list(args), **options)


def enqueue_on_commit(job: Job, *, countdown: float | None = None, priority: int | None = None) -> None:
    """Send ``job`` once the current transaction commits (at once outside one)."""
    from django.db import transaction

    if _capture is not None:  # tests run inside one transaction that never commits
        enqueue(job, countdown=countdown, priority=priority)
        return
    # robust: a broker that is down at the publish does not turn a committed request into an
    # error; what was not sent is sent again by ``runs.run_redispatch`` (docs/operations.md).
    transaction.on_commit(lambda: enqueue(job, countdown=countdown, priority=priority), robust=True)


def enqueue_now(job: Job) -> None:
    """Send ``job`` from outside any transaction of the caller's (the reaper)."""
    from django.db import transaction

    with transaction.atomic():
        enqueue_on_commit(job)

"""Enqueueing run tasks: services call :func:`enqueue_on_commit` with a typed job (``runs/jobs.py``).

A task enqueued from inside another task goes to the queue that task came from, so a run started
on a dedicated queue (tests, the benchmark, a tenant's own workers) stays on it. Tests swap the
transport for a list with :func:`capture` and drain it synchronously.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import Any

from celery.exceptions import OperationalError
from celery.utils.saferepr import saferepr
from kombu.exceptions import LimitExceeded
from kombu.utils.uuid import uuid

from runs.jobs import CaseRunExecute, Job

_capture: list[tuple[str, tuple[Any, ...], dict[str, Any]]] | None = None
_default_queue: str | None = None
_sender: TaskSender | None = None  # per process: the app's, built on first use
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


def enqueue(job: Job, *, countdown: float | None = None) -> None:
    """Send ``job`` to the broker now (services use :func:`enqueue_on_commit`)."""
    args = job.args()
    kept = getattr(_local, "kept", None)
    if kept is not None and not kept and isinstance(job, CaseRunExecute) and job.is_plain and not countdown:
        kept.append(job.case_run_id)
        return
    if _capture is not None:
        _capture.append((job.task_name, args, {"countdown": countdown}))
        return
    global _sender
    from celery import current_app

    app = current_app._get_current_object()
    queue = _current_queue() or _default_queue
    if countdown:  # a retry's delayed attempt: rare, and Celery's own path knows every broker's delays
        app.send_task(job.task_name, args=list(args), countdown=countdown, **({"queue": queue} if queue else {}))
        return
    if _sender is None or _sender.app is not app:
        _sender = TaskSender(app)
    _sender.send(job.task_name, list(args), queue)


class TaskSender:
    """``app.send_task(name, args=args, queue=queue)`` with what Celery resolves per call resolved once.

    Per call, ``send_task`` looked up the task's execution options, routed them, read several
    settings through Celery's layered configuration, and ``kombu`` copied and bound the queue to
    check that it was declared: together more CPU than building and pushing the message
    (docs/performance.md, "Publishing a case"). Here the options and the route are kept per
    (task, queue), unless ``task_routes`` may route by arguments; the message is built by
    Celery's own ``create_task_message`` and sent by its ``send_task_message`` (retry policy,
    publish signals, sent events), through a producer of the app's pool, so it is the message
    ``send_task`` sends (``runs/tests/test_task_sender.py``). Not replicated: adding the result to
    the calling task's ``request.children``, which only a stored result reads (our tasks
    ignore results).
    """

    def __init__(self, app: Any) -> None:
        self.app = app
        self.amqp = app.amqp
        self.sent_event = app.conf.task_send_sent_event
        self.inherit_priority = app.conf.task_inherit_parent_priority
        self.acquire_timeout = app.conf.broker_pool_acquire_timeout
        self.repr_maxlevels = app.conf.task_repr_maxlevels
        self.kwargsrepr = saferepr({}, self.amqp.kwargsrepr_maxsize, maxlevels=self.repr_maxlevels)
        self._routes: dict[tuple[str, str | None], tuple[dict[str, Any], Any, Any, Any]] = {}

    def _route(self, name: str, args: list[Any], queue: str | None) -> tuple[dict[str, Any], Any, Any, Any]:
        """(publish options, time limit, soft time limit, ignore_result), as ``send_task`` derives them."""
        found = self._routes.get((name, queue))
        if found is not None:
            return found
        task = self.app._tasks.get(name)  # as send_task looks it up: without finalizing the app
        options = {k: v for k, v in task._get_exec_options().items() if v is not None} if task is not None else {}
        if queue:
            options["queue"] = queue
        time_limit = options.pop("time_limit", None)
        soft_time_limit = options.pop("soft_time_limit", None)
        options.pop("expires", None)
        ignore_result = options.pop("ignore_result", None)
        options = self.amqp.router.route(options, name, args, None, task)
        found = (options, time_limit, soft_time_limit, ignore_result)
        if task is not None and not self.amqp.router.routes:  # a task_routes function may route by the arguments
            self._routes[(name, queue)] = found
        return found

    def send(self, name: str, args: list[Any], queue: str | None) -> str:
        options, time_limit, soft_time_limit, ignore_result = self._route(name, args, queue)
        task_id = uuid()
        root_id = parent_id = None
        parent = self.app.current_worker_task
        if parent:
            root_id = parent.request.root_id or parent.request.id
            parent_id = parent.request.id
            if self.inherit_priority:
                options = {"priority": parent.request.delivery_info.get("priority"), **options}
        message = self.amqp.create_task_message(
            task_id, name, args, reply_to=self.app.thread_oid, time_limit=time_limit, soft_time_limit=soft_time_limit,
            create_sent_event=self.sent_event, root_id=root_id, parent_id=parent_id, ignore_result=ignore_result,
            argsrepr=saferepr(args, self.amqp.argsrepr_maxsize, maxlevels=self.repr_maxlevels), kwargsrepr=self.kwargsrepr,
            **options,
        )  # fmt: skip
        destination = options.get("queue")
        try:
            acquired = self.app.producer_pool.acquire(block=True, timeout=self.acquire_timeout)
        except LimitExceeded as exc:  # as send_task reports it
            raise OperationalError(f"Timed out waiting for a broker producer after {self.acquire_timeout}s.") from exc
        with acquired as producer, producer.connection._reraise_as_library_errors():
            if not ignore_result:
                self.app.backend.on_task_call(producer, task_id)
            # kombu's own check (``maybe_declare``), without copying and binding the queue every time
            declared = (
                destination is not None and destination.can_cache_declaration and hash(destination) in producer.connection.declared_entities
            )
            self.amqp.send_task_message(producer, name, message, declare=[] if declared else None, **options)
        return task_id


def enqueue_on_commit(job: Job, *, countdown: float | None = None) -> None:
    """Send ``job`` once the current transaction commits (at once outside one)."""
    from django.db import transaction

    if _capture is not None:  # tests run inside one transaction that never commits
        enqueue(job, countdown=countdown)
        return
    transaction.on_commit(lambda: enqueue(job, countdown=countdown))


def enqueue_now(job: Job) -> None:
    """Send ``job`` from outside any transaction of the caller's (the reaper)."""
    from django.db import transaction

    with transaction.atomic():
        enqueue_on_commit(job)

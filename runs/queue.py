"""Enqueueing run tasks. Services call :func:`enqueue` (inside ``transaction.on_commit``).

A task enqueued from inside another task goes to the queue that task came from, so a run started
on a dedicated queue (tests, the benchmark, a tenant's own workers) stays on it. Tests swap the
transport for a list with :func:`capture` and drain it synchronously.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

_capture: list[tuple[str, tuple[Any, ...], dict[str, Any]]] | None = None
_default_queue: str | None = None


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


def enqueue(task_name: str, *args: Any, countdown: float | None = None) -> None:
    if _capture is not None:
        _capture.append((task_name, args, {"countdown": countdown}))
        return
    from celery import current_app as app

    options: dict[str, Any] = {}
    queue = _current_queue() or _default_queue
    if queue:
        options["queue"] = queue
    if countdown:
        options["countdown"] = countdown
    app.send_task(task_name, args=list(args), **options)


def enqueue_on_commit(task_name: str, *args: Any, countdown: float | None = None) -> None:
    from django.db import transaction

    if _capture is not None:  # tests run inside one transaction that never commits
        enqueue(task_name, *args, countdown=countdown)
        return
    transaction.on_commit(_bind(task_name, args, countdown))


def _bind(task_name: str, args: tuple[Any, ...], countdown: float | None) -> Callable[[], None]:
    return lambda: enqueue(task_name, *args, countdown=countdown)

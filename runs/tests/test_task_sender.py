"""``runs.queue.enqueue`` publishes exactly what ``app.send_task`` publishes (it calls it).

The re-implementation of ``send_task`` that resolved a task's route once was dropped: with chained
cases a pool process publishes about one task per ten cases, and its saving measured within noise
(docs/performance.md, "Fast paths behind adapters"). These tests keep the message the same.

Against the configured broker (filesystem by default, Redis when CELERY_BROKER_URL says so). That a
real worker consumes and runs these messages is ``runs/tests/test_worker.py``: every case task
there is sent this way.
"""

from __future__ import annotations

from typing import Any

import pytest
from celery import current_app as app
from celery._state import _task_stack

from runs import queue
from runs.jobs import CaseRunExecute
from runs.tasks import run_start  # registers the runs tasks, as in a worker: send_task then adds their options

TASK = CaseRunExecute.task_name


def _take(name: str) -> dict[str, Any]:
    with app.connection_for_write() as connection:
        message = connection.default_channel.basic_get(name, no_ack=True)
    assert message is not None, f"no message on {name}"
    return {"headers": message.headers, "properties": message.properties, "body": message.decode()}


def _without_ids(message: dict[str, Any]) -> dict[str, Any]:
    headers = {k: v for k, v in message["headers"].items() if k not in ("id", "root_id")}
    properties = {k: v for k, v in message["properties"].items() if k not in ("correlation_id", "delivery_tag")}
    return {"headers": headers, "properties": properties, "body": message["body"]}


def test_it_publishes_the_message_send_task_publishes(broker_queue):
    app.send_task(TASK, args=[41], queue=broker_queue)
    queue.enqueue(CaseRunExecute(case_run_id=41))
    first, second = _take(broker_queue), _take(broker_queue)
    assert _without_ids(first) == _without_ids(second)
    assert first["headers"]["id"] != second["headers"]["id"]
    assert first["body"][0] == [41]
    assert first["headers"]["timelimit"] == [
        app.conf.task_time_limit,
        app.conf.task_soft_time_limit,
    ]  # the task's own options, as send_task found them
    assert first["properties"]["delivery_info"]["routing_key"] == broker_queue


def test_inside_a_task_it_names_the_parent_and_root_as_send_task_does(broker_queue):
    parent = app.tasks[run_start.name]
    parent.push_request(id="parent-1", root_id="root-1", called_directly=False, delivery_info={"routing_key": broker_queue})
    _task_stack.push(parent)
    try:
        app.send_task(TASK, args=[7], queue=broker_queue)
        queue.enqueue(CaseRunExecute(case_run_id=7))  # no queue given: the parent's, as for a case dispatched by a worker
    finally:
        _task_stack.pop()
        parent.pop_request()
    first, second = _take(broker_queue), _take(broker_queue)
    assert _without_ids(first) == _without_ids(second)
    assert (second["headers"]["parent_id"], second["headers"]["root_id"]) == ("parent-1", "root-1")


def test_without_a_queue_it_goes_where_celery_routes_the_task(monkeypatch):
    sent: list[tuple[str, dict[str, Any]]] = []

    def send_task(name: str, **options: Any) -> None:
        sent.append((name, options))

    monkeypatch.setattr(app, "send_task", send_task)
    queue.use_queue(None)
    queue.enqueue(CaseRunExecute(case_run_id=4))
    assert sent == [(TASK, {"args": [4]})]  # no queue=None: Celery's own routing decides


def test_a_delayed_retry_still_carries_its_eta(broker_queue):
    queue.enqueue(CaseRunExecute(case_run_id=5, retry_of=2), countdown=30)
    message = _take(broker_queue)
    assert message["body"][0] == [5, 2]
    assert message["headers"]["eta"]


@pytest.fixture(autouse=True)
def _no_leftovers(broker_queue):
    yield
    with app.connection_for_write() as connection:
        connection.default_channel.queue_purge(broker_queue)

"""Typed jobs (runs/jobs.py) match the Celery tasks they name, argument for argument."""

from __future__ import annotations

import dataclasses
import inspect

import pytest
from celery import current_app

from runs import queue
from runs import tasks as _tasks  # noqa: F401 - registers the runs tasks
from runs.jobs import JOBS, CaseRunExecute, CaseRunFinalize, RunStart


@pytest.mark.parametrize("job", JOBS, ids=lambda job: job.__name__)
def test_every_job_names_a_registered_task_with_the_same_parameters(job):
    task = current_app.tasks[job.task_name]
    parameters = list(inspect.signature(task.run).parameters.values())
    fields = dataclasses.fields(job)
    assert [p.name for p in parameters] == [f.name for f in fields]
    assert [p.default for p in parameters] == [inspect.Parameter.empty if f.default is dataclasses.MISSING else f.default for f in fields]


def test_a_job_sends_its_arguments_in_order_without_trailing_defaults():
    assert CaseRunExecute(case_run_id=4).args() == (4,)
    assert CaseRunExecute(case_run_id=4, retry_of=2).args() == (4, 2)
    assert CaseRunExecute(case_run_id=4, stale_seconds=60.0).args() == (4, None, 60.0)
    assert RunStart(run_id=9).args() == (9,)


def test_a_job_is_keyword_only():
    with pytest.raises(TypeError):
        CaseRunExecute(4, 2)  # type: ignore[call-arg]


def test_enqueue_captures_the_task_name_and_arguments(tasks):
    queue.enqueue(CaseRunFinalize(case_run_id=3))
    queue.enqueue_on_commit(CaseRunExecute(case_run_id=5, retry_of=1), countdown=10)
    assert tasks.items[-2:] == [("runs.case_run_finalize", (3,), {"countdown": None}), ("runs.case_run_execute", (5, 1), {"countdown": 10})]

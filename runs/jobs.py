"""The run tasks as typed values: what services enqueue (``runs.queue.enqueue_on_commit(CaseRunExecute(case_run_id=…))``).

A service cannot import the Celery task objects (``runs/tasks.py`` calls the services: the import
check forbids the cycle), so each task has a frozen job type here with its keyword arguments,
checked by mypy at every call site instead of a task name string and positional arguments.
``runs/tasks.py`` registers each task under its job's ``task_name`` with the same parameters
(``runs/tests/test_jobs.py`` checks that they match). The message carries the arguments in the
task's parameter order, trailing defaults left out, as before: a message queued by an older
worker still runs.
"""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar


@dataclasses.dataclass(frozen=True, kw_only=True)
class Job:
    """One task to run: its Celery name and its arguments."""

    task_name: ClassVar[str]

    def args(self) -> tuple[Any, ...]:
        """The task's positional arguments, in its parameter order, without trailing defaults."""
        values = [getattr(self, field.name) for field in dataclasses.fields(self)]
        defaults = [field.default for field in dataclasses.fields(self)]
        while values and values[-1] == defaults[len(values) - 1] and defaults[len(values) - 1] is not dataclasses.MISSING:
            values.pop()
        return tuple(values)


@dataclasses.dataclass(frozen=True, kw_only=True)
class RunStart(Job):
    """Claim a queued run, open its lanes and fan its first cases out."""

    task_name: ClassVar[str] = "runs.run_start"
    run_id: int


@dataclasses.dataclass(frozen=True, kw_only=True)
class CaseRunExecute(Job):
    """Claim and run one case. ``retry_of``: the attempt being retried (its claim is taken over);
    ``stale_seconds``: take over a running case whose heartbeat is older (the reaper's re-queue)."""

    task_name: ClassVar[str] = "runs.case_run_execute"
    case_run_id: int
    retry_of: int | None = None
    stale_seconds: float | None = None

    @property
    def is_plain(self) -> bool:
        """A first dispatch of a queued case (no retry, no takeover): one a chain may run itself."""
        return self.retry_of is None and self.stale_seconds is None


@dataclasses.dataclass(frozen=True, kw_only=True)
class CaseRunFinalize(Job):
    """Score one finished case, then let its lane move on."""

    task_name: ClassVar[str] = "runs.case_run_finalize"
    case_run_id: int


@dataclasses.dataclass(frozen=True, kw_only=True)
class CaseRunDeadline(Job):
    """A hosted case's deadline: close and finish it unless its agent finished it first."""

    task_name: ClassVar[str] = "runs.case_run_deadline"
    case_run_id: int
    attempt: int


@dataclasses.dataclass(frozen=True, kw_only=True)
class RunRoundAdvance(Job):
    """An adaptive run's round may be over: decide, then add a round of trials or finish the lanes."""

    task_name: ClassVar[str] = "runs.run_round_advance"
    run_id: int


@dataclasses.dataclass(frozen=True, kw_only=True)
class RunReap(Job):
    """The periodic safety net (celery beat)."""

    task_name: ClassVar[str] = "runs.run_reap"


@dataclasses.dataclass(frozen=True, kw_only=True)
class RunRedispatch(Job):
    """Send again what a broker restart or a crash between commit and publish lost (celery beat)."""

    task_name: ClassVar[str] = "runs.run_redispatch"


JOBS: tuple[type[Job], ...] = (RunStart, CaseRunExecute, CaseRunFinalize, CaseRunDeadline, RunRoundAdvance, RunReap, RunRedispatch)

"""One background thread per process for a running case's periodic jobs (docs/performance.md).

A case used to start two threads of its own, the heartbeat and the event sink's timed flush,
and join them at its end: on a loaded machine each start waits for the new thread to be
scheduled, a few milliseconds per case. :data:`TICKER` runs every case's jobs from one
long-lived thread instead. :meth:`Ticker.remove` returns only once the job is not running and
never will again, as joining the thread did.
"""

from __future__ import annotations

import itertools
import logging
import os
import threading
import time
from collections.abc import Callable

from django.db import connection

logger = logging.getLogger(__name__)


class Job:
    def __init__(self, fn: Callable[[], None], every: float, name: str) -> None:
        self.fn, self.every, self.name = fn, every, name
        self.due = time.monotonic() + every
        self.running = threading.Lock()  # held while ``fn`` runs
        self.removed = False


class Ticker:
    """Calls each added job every ``every`` seconds (first call one period after it is added)."""

    def __init__(self) -> None:
        self._reset()

    def _reset(self) -> None:  # also in a forked child: the parent's thread and jobs are not ours
        self.lock = threading.Lock()
        self.wake = threading.Condition(self.lock)
        self.jobs: dict[int, Job] = {}
        self.ids = itertools.count(1)
        self.thread: threading.Thread | None = None

    def add(self, fn: Callable[[], None], every: float, name: str = "") -> Job:
        job = Job(fn, every, name)
        with self.lock:
            self.jobs[next(self.ids)] = job
            if self.thread is None or not self.thread.is_alive():
                self.thread = threading.Thread(target=self._loop, daemon=True, name="case-ticker")
                self.thread.start()
            self.wake.notify()
        return job

    def remove(self, job: Job) -> None:
        """Stop calling ``job``; waits for a call in progress to end."""
        with self.lock:
            job.removed = True
            for key in [key for key, value in self.jobs.items() if value is job]:
                del self.jobs[key]
        with job.running:
            pass

    def _loop(self) -> None:
        while True:
            with self.lock:
                now = time.monotonic()
                due = [job for job in self.jobs.values() if job.due <= now]
                if not due:
                    nxt = min((job.due for job in self.jobs.values()), default=None)
                    self.wake.wait(None if nxt is None else max(0.0, nxt - now))
                    continue
                for job in due:
                    job.due = now + job.every
            for job in due:
                self._run(job)
            with self.lock:
                idle = not self.jobs
            if idle:  # no case running here: don't keep a database connection open
                connection.close()

    @staticmethod
    def _run(job: Job) -> None:
        with job.running:
            if job.removed:
                return
            try:
                job.fn()
            except Exception:
                logger.exception("case job %s failed", job.name)
                connection.close()  # a broken connection is opened again by the next job


TICKER = Ticker()
os.register_at_fork(after_in_child=TICKER._reset)

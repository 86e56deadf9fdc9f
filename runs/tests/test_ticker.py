"""The process's one ticker thread runs each case's periodic jobs (runs/ticker.py)."""

from __future__ import annotations

import threading
import time

from runs.ticker import Ticker


def test_jobs_run_on_time_from_one_thread_until_removed():
    ticker = Ticker()
    calls: list[tuple[str, str]] = []
    fast = ticker.add(lambda: calls.append(("fast", threading.current_thread().name)), 0.02)
    slow = ticker.add(lambda: calls.append(("slow", threading.current_thread().name)), 0.5)
    time.sleep(0.2)
    ticker.remove(fast)
    seen = len(calls)
    time.sleep(0.1)
    ticker.remove(slow)
    assert [name for name, _ in calls].count("fast") >= 3
    assert "slow" not in [name for name, _ in calls]  # its first call is one period after it was added
    assert {thread for _, thread in calls} == {"case-ticker"}
    assert len(calls) == seen  # removed: never called again


def test_remove_waits_for_a_call_in_progress():
    ticker = Ticker()
    started, release, done = threading.Event(), threading.Event(), threading.Event()

    def job() -> None:
        started.set()
        release.wait(5)
        done.set()

    handle = ticker.add(job, 0.01)
    assert started.wait(5)
    remover = threading.Thread(target=ticker.remove, args=(handle,))
    remover.start()
    remover.join(0.1)
    assert remover.is_alive()  # still inside the job
    release.set()
    remover.join(5)
    assert done.is_set() and not remover.is_alive()


def test_a_failing_job_is_logged_and_kept(caplog):
    ticker = Ticker()
    calls = []

    def job() -> None:
        calls.append(1)
        raise RuntimeError("boom")

    handle = ticker.add(job, 0.02, name="flaky")
    time.sleep(0.15)
    ticker.remove(handle)
    assert len(calls) >= 2 and "case job flaky failed" in caplog.text

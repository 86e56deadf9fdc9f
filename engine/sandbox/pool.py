"""Warm sandboxes: pre-start the next case's sandbox while the current case runs.

A cold sandbox pays bwrap, PID 1's start and the cgroup placement (~15 ms on the
reference machine) before its first command. With ``SandboxSettings.warm_sandboxes`` > 0,
:func:`checkout` hands out a sandbox whose bwrap and launcher are already running and queues the
start of the next one on a per-process starter thread, ``PRESTART_DELAY`` later (the case just
handed out stages its files and starts undisturbed), so the next case's first command costs one
round trip. A hand-out that finds the next one not started yet starts cold instead of waiting.

Rules (docs/engine-safety.md, "Warm sandboxes and the persistent channel"):

- **One use.** A pre-started sandbox is handed out once, to one case, and destroyed after it
  like any other; it never comes back to the pool. Nothing is reset, so nothing can be left
  behind by a previous case.
- **Pristine at hand-out.** It is handed out only if its launcher is alive, no command or data
  tool has run in it and its workspace is empty (:meth:`LocalSandbox.warm_ready`); otherwise it
  is destroyed and the case gets a cold sandbox.
- **Same shape.** What bwrap and the launcher are started with (rlimits, cgroup caps, workspace
  tmpfs size, base dir, operator settings) is the pool key (:func:`shape_key`); the case's own
  config (env, shell rule, timeouts) is per call and is set at hand-out. The workspace is bound
  empty at start and populated on the host (``stage_files``) after hand-out.
- **No egress.** A sandbox with an egress proxy is never pre-started (the proxy is bound at start
  and carries the pack's allowlist); such cases start cold.
- **Per process.** The pool belongs to the process that made it; a forked child starts with an
  empty pool and never touches the parent's sandboxes. Idle sandboxes are destroyed at exit, die
  with the worker (``--die-with-parent``) if it is killed, and are removed by
  ``reap_stale_sandboxes`` at the next worker start.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import logging
import os
import threading
from concurrent.futures import Future
from typing import Any

from engine.sandbox.base import SandboxConfig, SandboxSettings
from engine.sandbox.bwrap import START_TIMEOUT, bwrap_path
from engine.sandbox.local import LocalSandbox, default_base_dir

log = logging.getLogger(__name__)

ShapeKey = tuple[Any, ...]
PRESTART_DELAY = 0.25  # let the case just handed out stage its files and start undisturbed


def shape_key(config: SandboxConfig, base_dir: str | None, settings: SandboxSettings) -> ShapeKey | None:
    """What a sandbox is started with, or None when this config is never pre-started."""
    if config.egress_enabled or config.read_only_binds:
        return None  # egress and extra binds are start-time mounts a warm sandbox was not given
    if bwrap_path() is None:
        return None
    cap = config.max_workspace_bytes or settings.default_workspace_bytes
    return (base_dir or default_base_dir(), settings, config.memory_bytes, config.max_processes, config.file_size_bytes, cap)


def _template(config: SandboxConfig) -> SandboxConfig:
    """A config with only the start-time fields of ``config`` (nothing of the case)."""
    return SandboxConfig(
        memory_bytes=config.memory_bytes,
        max_processes=config.max_processes,
        file_size_bytes=config.file_size_bytes,
        max_workspace_bytes=config.max_workspace_bytes,
    )


class WarmPool:
    """Per-process pool of pre-started, one-use sandboxes (at most ``settings.warm_sandboxes`` kept)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.pid = os.getpid()
        self.entries: list[tuple[ShapeKey, Future[LocalSandbox], threading.Event]] = []
        self.stats = {"warm": 0, "cold": 0, "discarded": 0}
        # Shapes whose last case ran no command and no data tool (a read-only pack's): a cold
        # sandbox of theirs never starts bwrap, so a spare would be a start for nothing.
        self.unused: set[ShapeKey] = set()
        # One long-lived starter thread: Thread.start() per refill would wait for a GIL hand-off
        # (up to the 5 ms switch interval) on the case's path.
        self.jobs: list[tuple[Any, ...]] = []
        self.wake = threading.Condition(self.lock)
        self.thread: threading.Thread | None = None

    def after_fork(self) -> None:
        """In a forked child: fresh locks (one may have been held at the fork) and an empty pool."""
        self.lock = threading.Lock()
        self.wake = threading.Condition(self.lock)
        self._own()

    def _own(self) -> None:
        if self.pid != os.getpid():  # forked: the parent's sandboxes are not ours to use or destroy
            self.pid = os.getpid()
            self.entries = []
            self.jobs = []
            self.thread = None

    def checkout(self, config: SandboxConfig, *, base_dir: str | None, settings: SandboxSettings) -> LocalSandbox:
        """A sandbox for ``config``: a pre-started one when one of this shape is ready or starting
        (then wait for it), else a cold one; then queue the start of the next one of this shape."""
        key = shape_key(config, base_dir, settings)
        if key is None or settings.warm_sandboxes <= 0:
            return LocalSandbox(config, base_dir=base_dir, settings=settings)
        sandbox = self._take(key)
        if sandbox is not None:
            sandbox.adopt(config)
            self.stats["warm"] += 1
        else:
            sandbox = LocalSandbox(config, base_dir=base_dir, settings=settings)
            self.stats["cold"] += 1
        with self.lock:
            unused = key in self.unused
        go = None if unused else self._refill(key, config, base_dir, settings)
        sandbox.on_destroyed = functools.partial(self._finished, key, go, (config, base_dir, settings))
        return sandbox

    def _finished(self, key: ShapeKey, go: threading.Event | None, start: tuple[Any, ...], ran: bool) -> None:
        """A handed-out sandbox was destroyed. If its case ran something, start the next spare now
        (back-to-back cases find it started while the finished case is recorded); if it ran
        nothing, the shape gets no spare until one of its cases does, and a spare still waiting
        for its start is cancelled."""
        with self.lock:
            self._own()
            if ran:
                self.unused.discard(key)
            else:
                self.unused.add(key)
                for entry in [e for e in self.entries if e[0] == key]:
                    if entry[1].cancel():  # not started yet: it never will be
                        self.entries.remove(entry)
                        entry[2].set()
        if not ran:
            return
        if go is None:
            go = self._refill(key, *start)
        if go is not None:
            go.set()

    def _take(self, key: ShapeKey) -> LocalSandbox | None:
        with self.lock:
            self._own()
            found = next((entry for entry in self.entries if entry[0] == key), None)
            if found is None:
                return None
            self.entries.remove(found)
        if found[1].cancel():  # not started yet: a cold start here is sooner than waiting for it
            found[2].set()
            return None
        try:
            sandbox = found[1].result(timeout=START_TIMEOUT)
        except Exception as exc:  # noqa: BLE001 - a failed or slow pre-start only means a cold start
            log.warning("pre-starting a sandbox failed: %s", exc)
            found[1].add_done_callback(_destroy_result)  # one that finishes late is destroyed then
            return None
        if sandbox.warm_ready():
            return sandbox
        self.stats["discarded"] += 1
        _destroy(sandbox)
        return None

    def _refill(self, key: ShapeKey, config: SandboxConfig, base_dir: str | None, settings: SandboxSettings) -> threading.Event | None:
        """Queue the start of a spare of this shape; returns what starts it early (else it starts
        ``PRESTART_DELAY`` later), or None when the pool holds enough of this shape already."""
        evicted: list[Future[LocalSandbox]] = []  # started ones are destroyed when ready
        with self.lock:
            self._own()
            if sum(1 for entry in self.entries if entry[0] == key) >= settings.warm_sandboxes:
                return None
            future: Future[LocalSandbox] = Future()
            go = threading.Event()
            self.entries.append((key, future, go))
            while len(self.entries) > settings.warm_sandboxes:
                _, old_future, old_go = self.entries.pop(0)  # oldest first: another shape's spare
                old_future.cancel()  # not started yet: it never will be
                old_go.set()
                evicted.append(old_future)
            self.jobs.append((future, go, _template(config), base_dir, settings))
            self.wake.notify()
            if self.thread is None or not self.thread.is_alive():
                self.thread = threading.Thread(target=self._starter, name="sandbox-prestart", daemon=True)
                self.thread.start()
        for old in evicted:
            old.add_done_callback(_destroy_result)
        return go

    def _starter(self) -> None:
        while True:
            with self.lock:
                while not self.jobs:
                    self.wake.wait()
                job = self.jobs.pop(0)
            _prestart(*job)

    def wait_ready(self, timeout: float = START_TIMEOUT) -> None:
        """Block until every pending pre-start has finished (benchmarks and tests)."""
        with self.lock:
            futures = [entry[1] for entry in self.entries]
        for future in futures:
            with contextlib.suppress(Exception):
                future.result(timeout=timeout)

    def idle(self) -> int:
        with self.lock:
            self._own()
            return len(self.entries)

    def close(self) -> None:
        """Destroy every idle pre-started sandbox of this process."""
        with self.lock:
            if self.pid != os.getpid():
                return
            entries, self.entries = self.entries, []
        for _, future, go in entries:
            go.set()
            future.add_done_callback(_destroy_result)
            with contextlib.suppress(Exception):
                future.result(timeout=START_TIMEOUT)


def _prestart(
    future: Future[LocalSandbox], go: threading.Event, config: SandboxConfig, base_dir: str | None, settings: SandboxSettings
) -> None:
    go.wait(PRESTART_DELAY)
    if not future.set_running_or_notify_cancel():
        return
    sandbox: LocalSandbox | None = None
    try:
        sandbox = LocalSandbox(config, base_dir=base_dir, settings=settings)
        sandbox.prestart()
    except BaseException as exc:  # noqa: BLE001 - handed to whoever takes this entry
        if sandbox is not None:
            _destroy(sandbox)
        future.set_exception(exc)
        return
    future.set_result(sandbox)


def _destroy(sandbox: LocalSandbox) -> None:
    try:
        sandbox.destroy()
    except Exception:
        log.exception("destroying pre-started sandbox %s failed", sandbox.id)


def _destroy_result(future: Future[LocalSandbox]) -> None:
    if not future.cancelled() and future.exception() is None:
        _destroy(future.result())


POOL = WarmPool()
atexit.register(POOL.close)
os.register_at_fork(after_in_child=POOL.after_fork)


def checkout(config: SandboxConfig, *, base_dir: str | None = None, settings: SandboxSettings | None = None) -> LocalSandbox:
    return POOL.checkout(config, base_dir=base_dir, settings=settings or SandboxSettings())

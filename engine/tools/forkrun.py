"""Run a CPU-bound in-process library call (jq) in a forked child with a time and memory bound.

The jq bindings cannot be interrupted from Python; a forked child can be killed.
"""

from __future__ import annotations

import os
import pickle
import resource
import select
import signal
import time
from collections.abc import Callable
from typing import Any

MEMORY_BYTES = 1024 * 1024 * 1024
MAX_RESULT_BYTES = 64 * 1024 * 1024


class ForkTimeout(Exception):
    pass


class ForkFailed(Exception):
    pass


def run(fn: Callable[[], Any], timeout: float) -> Any:
    """Return fn()'s value, re-raise its exception, or raise ForkTimeout/ForkFailed."""
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - child
        os.close(read_fd)
        try:
            resource.setrlimit(resource.RLIMIT_AS, (MEMORY_BYTES, MEMORY_BYTES))
            try:
                outcome = ("ok", fn())
            except Exception as exc:  # noqa: BLE001 - shipped back to the parent
                outcome = ("err", exc)
            try:
                data = pickle.dumps(outcome)
            except Exception as exc:  # noqa: BLE001 - unpicklable result
                data = pickle.dumps(("err", ForkFailed(type(exc).__name__)))
            with os.fdopen(write_fd, "wb") as fh:
                fh.write(data)
        finally:
            os._exit(0)
    os.close(write_fd)
    chunks: list[bytes] = []
    size = 0
    deadline = time.monotonic() + timeout
    try:
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise ForkTimeout()
            ready, _, _ = select.select([read_fd], [], [], remaining)
            if not ready:
                continue
            chunk = os.read(read_fd, 1 << 16)
            if not chunk:
                break
            size += len(chunk)
            if size > MAX_RESULT_BYTES:
                raise ForkFailed("result too large")
            chunks.append(chunk)
    finally:
        os.close(read_fd)
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        os.waitpid(pid, 0)
    if not chunks:
        raise ForkFailed("no result")
    kind, value = pickle.loads(b"".join(chunks))  # noqa: S301 - our own forked child wrote it
    if kind == "err":
        raise value
    return value

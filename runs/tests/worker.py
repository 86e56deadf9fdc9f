"""A real Celery worker subprocess on a private queue, sharing the test database and broker."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

from django.conf import settings
from django.db import connection

ROOT = Path(__file__).resolve().parents[2]


def database_url() -> str:
    cfg = connection.settings_dict
    if cfg["ENGINE"].endswith("sqlite3"):
        return f"sqlite:///{cfg['NAME']}"
    auth = cfg["USER"] + (f":{cfg['PASSWORD']}" if cfg.get("PASSWORD") else "")
    return f"postgres://{auth}@{cfg.get('HOST') or '127.0.0.1'}:{cfg.get('PORT') or 5432}/{cfg['NAME']}"


class Worker:
    def __init__(self, queue: str | None = None, concurrency: int = 2, extra_env: dict[str, str] | None = None) -> None:
        self.queue = queue or f"runs-test-{uuid.uuid4().hex[:10]}"
        self.concurrency = concurrency
        self.extra_env = extra_env or {}
        self.process: subprocess.Popen | None = None

    def env(self) -> dict[str, str]:
        env = dict(os.environ)
        env.update({
            "DJANGO_SETTINGS_MODULE": "agentclash.settings.test", "DATABASE_URL": database_url(),
            "MEDIA_ROOT": str(settings.MEDIA_ROOT), "SANDBOX_ROOT": str(settings.SANDBOX_ROOT),
            "CELERY_BROKER_URL": settings.CELERY_BROKER_URL, "LOG_LEVEL": "WARNING",
        })  # fmt: skip
        env.update(self.extra_env)
        return env

    def start(self) -> Worker:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "agentclash", "worker", "-Q", self.queue, "-c", str(self.concurrency),
             "-n", f"{self.queue}-{uuid.uuid4().hex[:4]}@%h", "--without-gossip", "--without-mingle", "-l", "WARNING"],
            cwd=ROOT, env=self.env(), start_new_session=True,
        )  # fmt: skip
        return self

    @property
    def pid(self) -> int:
        if self.process is None:
            raise RuntimeError("the worker has not been started")
        return self.process.pid

    def supervise(self) -> bool:
        """Start the worker again if its main process has exited, as a deployment's supervisor does
        (Celery 5's consumer can end with "Unrecoverable error" when a Redis broker goes away while
        it reconnects). True when it was restarted."""
        if self.process is None or self.process.poll() is None:
            return False
        try:
            os.killpg(self.process.pid, signal.SIGKILL)  # pool children it left behind
        except ProcessLookupError:
            pass
        self.start()
        return True

    def kill(self) -> None:
        if self.process and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=10)

    def stop(self) -> None:
        """Warm shutdown: SIGTERM to the main process only, which closes its pool so the pool
        children exit normally (and write their coverage data; a SIGTERM of their own kills them
        outright). Whatever is left of the process group after that is killed."""
        if self.process and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.kill()
        if self.process:
            try:
                os.killpg(self.process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def wait_for(predicate, timeout: float = 90.0, interval: float = 0.2) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    return False

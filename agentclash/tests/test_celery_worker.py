"""A real worker process against the configured broker (filesystem by default, Redis in CI)."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from celery.app.backends import by_url
from django.conf import settings

from agentclash.celery import app
from workspaces.tasks import ping


def _result_backend_url(tmp_path: Path) -> str:
    broker = settings.CELERY_BROKER_URL
    if broker.startswith("redis://"):
        return broker
    return f"file://{tmp_path}/results"


def test_a_task_round_trips_through_a_real_worker(tmp_path):
    backend_url = _result_backend_url(tmp_path)
    if backend_url.startswith("file://"):
        (tmp_path / "results").mkdir()
    queue = f"test-{uuid.uuid4().hex[:8]}"
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "agentclash.settings.test", "CELERY_RESULT_BACKEND": backend_url}
    worker = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "agentclash",
            "worker",
            "-Q",
            queue,
            "--pool=solo",
            "--loglevel=WARNING",
            "--without-mingle",
            "--without-gossip",
        ],
        cwd=settings.BASE_DIR,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        backend_cls, url = by_url(backend_url, app.loader)
        backend = backend_cls(app=app, url=url)
        sent = ping.apply_async(args=["hello"], queue=queue)
        result = app.AsyncResult(sent.id, backend=backend)
        assert result.get(timeout=90) == "hello"
    except Exception:
        worker.kill()
        output = worker.communicate(timeout=10)[0].decode(errors="replace")
        pytest.fail(f"worker did not answer; its output:\n{output[-3000:]}")
    finally:
        if worker.poll() is None:
            worker.terminate()
            try:
                worker.wait(timeout=20)
            except subprocess.TimeoutExpired:
                worker.kill()

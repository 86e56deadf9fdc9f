"""The CLI against a live test server (real HTTP) and, where runs execute, a real Celery worker.

The CLI package lives in ``cli/agentclash_cli`` (installable on its own); the tests import it from
the checkout.
"""

from __future__ import annotations

import contextlib
import io
import sys
from pathlib import Path

import pytest

CLI_ROOT = Path(__file__).resolve().parents[1]
if str(CLI_ROOT) not in sys.path:
    sys.path.insert(0, str(CLI_ROOT))

from agentclash_cli.main import main  # noqa: E402

from infrastructure import demo as demo_infrastructure  # noqa: E402
from packs.services import pack_publish  # noqa: E402
from runs import queue  # noqa: E402
from runs.tests.worker import Worker  # noqa: E402
from workspaces.services import api_token_create  # noqa: E402

from .live import DEMO_PROMPT_PACK, Result  # noqa: E402


@pytest.fixture
def server(live_server, member, workspace, monkeypatch):
    """AGENTCLASH_URL / _TOKEN / _WORKSPACE for a member of ``acme`` on the live server."""
    _, raw = api_token_create(user=member, name="ci")
    monkeypatch.setenv("AGENTCLASH_URL", live_server.url)
    monkeypatch.setenv("AGENTCLASH_TOKEN", raw)
    monkeypatch.setenv("AGENTCLASH_WORKSPACE", workspace.slug)
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    return live_server


def invoke(*args: str) -> Result:
    """The real entry point, in-process: Result(code, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(list(args))
        except SystemExit as exc:  # argparse
            code = int(exc.code or 0)
    return Result(code, out.getvalue(), err.getvalue())


@pytest.fixture
def cli(server):
    """``cli("packs", "validate", FILE)`` → Result(code, stdout, stderr), against the live server."""
    return invoke


@pytest.fixture
def offline_cli(monkeypatch):
    """``offline_cli(...)``: the entry point with a token and workspace but no server (pass ``--url``)."""
    monkeypatch.setenv("AGENTCLASH_TOKEN", "act_test")
    monkeypatch.setenv("AGENTCLASH_WORKSPACE", "acme")
    monkeypatch.delenv("AGENTCLASH_URL", raising=False)
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    return invoke


@pytest.fixture
def captured_tasks():
    """Tasks the live server enqueues are kept in a list instead of the broker (runs that are only created)."""
    tasks: list = []
    queue.capture(tasks)
    yield tasks
    queue.capture(None)


@pytest.fixture
def demo(workspace, admin):
    """The demo prompt-eval pack and the scripted demo deployments (a good and a sloppy agent)."""
    demo_infrastructure.seed(workspace=workspace, user=admin)
    return pack_publish(workspace=workspace, user=admin, source=DEMO_PROMPT_PACK.read_text(encoding="utf-8"))


@pytest.fixture
def worker_queue(django_db_setup):
    """A real Celery worker for the test, on a private queue the live server enqueues to (after
    the test database exists: the worker is pointed at it). One per test, not per module: its warm
    shutdown waits for what it is still doing (scoring, exports, a retry's countdown goes back to
    its private queue), so nothing writes while the next test's flush truncates the tables."""
    queue.capture(None)
    worker = Worker(concurrency=2).start()
    queue.use_queue(worker.queue)
    yield worker.queue
    queue.use_queue(None)
    worker.stop()

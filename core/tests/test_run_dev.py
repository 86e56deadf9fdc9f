"""`make run` (scripts/run_dev.sh) is honest about where and when (issue 25): it serves on
``HOST``/``PORT``, says "ready" only once the web server answers, and says so when it cannot
start. A stand-in Python takes the place of the worker and the web server."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from workspaces.management.commands.seed_demo import browse_url

ROOT = Path(__file__).resolve().parents[2]

# Stand-in for .venv/bin/python: "-m celery …" idles; "manage.py runserver HOST:PORT" serves after
# a delay (or exits at once when FAKE_WEB_FAILS is set); "-c CODE URL" runs the readiness probe.
FAKE_PY = textwrap.dedent(
    f"""\
    #!{sys.executable}
    import http.server, os, sys, time
    args = sys.argv[1:]
    if args[:2] == ["-m", "celery"]:
        time.sleep(600)
    elif args[:2] == ["manage.py", "runserver"]:
        if os.environ.get("FAKE_WEB_FAILS"):
            sys.exit(1)
        time.sleep(1.0)  # "ready" must not come before this
        open(os.environ["FAKE_STARTED"], "w").write(str(time.time()))
        host, port = args[2].rsplit(":", 1)
        http.server.HTTPServer((host, int(port)), http.server.SimpleHTTPRequestHandler).serve_forever()
    elif args[:1] == ["-c"]:
        sys.argv = ["-c", *args[2:]]
        exec(args[1])
    """
)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _start(tmp_path: Path, **env: str) -> subprocess.Popen[str]:
    fake = tmp_path / "python"
    fake.write_text(FAKE_PY)
    fake.chmod(0o755)
    environment = {**os.environ, "PY": str(fake), "FAKE_STARTED": str(tmp_path / "started"), **env}
    return subprocess.Popen(
        ["bash", str(ROOT / "scripts" / "run_dev.sh")], env=environment, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        start_new_session=True,
    )  # fmt: skip


def _read_until(process: subprocess.Popen[str], needle: str, timeout: float = 30) -> str:
    seen = ""
    deadline = time.time() + timeout
    assert process.stdout is not None
    while time.time() < deadline:
        line = process.stdout.readline()
        seen += line
        if needle in line or (not line and process.poll() is not None):
            return seen
    return seen


@pytest.mark.slow
def test_make_run_serves_on_port_and_says_ready_only_once_it_answers(tmp_path):
    port = _free_port()
    process = _start(tmp_path, PORT=str(port), HOST="0.0.0.0")
    try:
        output = _read_until(process, "ready")
        ready_at = time.time()
        assert f"AgentClash is ready: http://127.0.0.1:{port}/" in output, output
        assert f"web server on 0.0.0.0:{port}" in output and ":8000" not in output
        started = float((tmp_path / "started").read_text())
        assert started <= ready_at  # the server was up before "ready"
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=10)


@pytest.mark.slow
def test_make_run_says_when_the_web_server_cannot_start(tmp_path):
    process = _start(tmp_path, PORT=str(_free_port()), FAKE_WEB_FAILS="1")
    try:
        output = _read_until(process, "stopped before it answered")
        assert "The web server stopped before it answered" in output and "ready" not in output.replace("already", "")
        assert process.wait(timeout=10) == 1
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)


def test_the_demo_login_hint_uses_host_and_port(monkeypatch):
    monkeypatch.setenv("PORT", "8123")
    monkeypatch.setenv("HOST", "0.0.0.0")
    assert browse_url() == "http://127.0.0.1:8123/"
    monkeypatch.setenv("HOST", "::1")
    assert browse_url() == "http://[::1]:8123/"
    monkeypatch.delenv("PORT")
    monkeypatch.delenv("HOST")
    assert browse_url() == "http://127.0.0.1:8000/"

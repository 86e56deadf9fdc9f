"""Test helpers for hosted agents: a hosted deployment, a claimed case, the reference agent on loopback."""

from __future__ import annotations

import importlib.util
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import ModuleType
from typing import Any

from infrastructure.models import AgentDeployment, ExecutionTarget, ProviderAccount, RuntimeProfile
from runs.models import CaseRun, CaseStatus, Run, RunStatus
from workspaces.models import Workspace

AGENT_PATH = Path(__file__).resolve().parents[2] / "examples" / "hosted_agent" / "agent.py"


def hosted_deployment(workspace: Workspace, *, name: str = "hosted", endpoint_url: str = "http://127.0.0.1:9/case") -> AgentDeployment:
    account = ProviderAccount.objects.create(workspace=workspace, name=f"{name}-account", provider_key="scripted")
    profile = RuntimeProfile.objects.create(
        workspace=workspace, name=f"{name}-profile", execution_target=ExecutionTarget.HOSTED_EXTERNAL, run_timeout_seconds=30
    )
    return AgentDeployment.objects.create(
        workspace=workspace,
        name=name,
        provider_account=account,
        model="team-agent",
        runtime_profile=profile,
        endpoint_url=endpoint_url,
    )


def claim(case_run: CaseRun, attempt: int = 1) -> CaseRun:
    """What the worker's claim does, for tests that drive the callback without a worker."""
    Run.objects.filter(pk=case_run.run_id).update(status=RunStatus.RUNNING)
    CaseRun.objects.filter(pk=case_run.pk).update(status=CaseStatus.RUNNING, attempt=attempt)
    case_run.refresh_from_db()
    return case_run


def reference_agent() -> ModuleType:
    spec = importlib.util.spec_from_file_location("hosted_reference_agent", AGENT_PATH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@contextmanager
def agent_on_loopback(**options: Any) -> Iterator[ThreadingHTTPServer]:
    """The reference agent (examples/hosted_agent/agent.py) serving on 127.0.0.1, in a thread."""
    server = reference_agent().serve("127.0.0.1", 0, **options)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


def agent_url(server: ThreadingHTTPServer) -> str:
    return f"http://127.0.0.1:{server.server_address[1]}/case"


@contextmanager
def endpoint(status: int = 202, body: bytes = b"", headers: dict[str, str] | None = None) -> Iterator[tuple[str, list[dict]]]:
    """A loopback endpoint answering every POST the same way; yields its URL and what it received."""
    received: list[dict] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            received.append({"headers": dict(self.headers), "body": json.loads(self.rfile.read(int(self.headers["Content-Length"])))})
            self.send_response(status)
            for key, value in (headers or {}).items():
                self.send_header(key, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/case", received
    finally:
        server.shutdown()
        server.server_close()

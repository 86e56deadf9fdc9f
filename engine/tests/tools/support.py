"""Shared helpers for engine tool/sandbox/net tests."""

from __future__ import annotations

import json
import os
import shutil
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from engine.sandbox import SandboxConfig, SandboxSettings, create_sandbox
from engine.tools import build_toolset
from engine.types import ToolCall

HAVE_BWRAP = shutil.which("bwrap") is not None


def requires_bwrap(fn):
    if HAVE_BWRAP or os.environ.get("REQUIRE_SERVICES") == "1":
        return fn
    return pytest.mark.skip(reason="bubblewrap not installed")(fn)


def manifest(
    kinds: list[str] | None = None,
    *,
    shell: bool = False,
    network: bool = False,
    allowlist: list[str] | None = None,
    tools: dict | None = None,
    env: dict | None = None,
) -> dict[str, Any]:
    m: dict[str, Any] = {"tool_policy": {"allowed_tool_kinds": kinds or [], "allow_shell": shell}}
    sandbox: dict[str, Any] = {"network_access": network}
    if allowlist:
        sandbox["network_allowlist"] = allowlist
    if env:
        sandbox["env_vars"] = env
    m["sandbox"] = sandbox
    if tools is not None:
        m["tools"] = tools
    return m


# Tests reach loopback servers they start, which the egress policy refuses unless the operator's
# SANDBOX_PRIVATE_ALLOWLIST covers them (and the pack allowlists them). Production default: empty.
TEST_PRIVATE_ALLOWLIST = ("127.0.0.0/8",)


class Harness:
    def __init__(
        self,
        m: dict[str, Any],
        secrets: dict[str, str] | None = None,
        tmp: str | None = None,
        *,
        private_allowlist: tuple[str, ...] = TEST_PRIVATE_ALLOWLIST,
        network_mode: str = "allowlist",
        settings: SandboxSettings | None = None,
        **kw: Any,
    ):
        self.manifest = m
        config = SandboxConfig.from_manifest(m)
        config.apply_operator_network(network_mode, private_allowlist)
        self.sandbox = create_sandbox(config, base_dir=tmp, settings=settings)
        self.toolset = build_toolset(m, sandbox=self.sandbox, secrets=secrets or {}, **kw)

    def call(self, name: str, args: Any = None, raw: str | None = None):
        text = raw if raw is not None else json.dumps(args or {})
        return self.toolset.execute(ToolCall(id="c1", name=name, arguments=text))

    def content(self, name: str, args: Any = None) -> Any:
        return json.loads(self.call(name, args).content)

    def error(self, name: str, args: Any = None) -> str:
        result = self.call(name, args)
        assert result.is_error, result
        return json.loads(result.content)["error"]

    def close(self) -> None:
        self.sandbox.destroy()


@pytest.fixture
def harness_factory(tmp_path):
    made: list[Harness] = []

    def make(m: dict[str, Any] | None = None, **kw: Any) -> Harness:
        h = Harness(m if m is not None else manifest(shell=True), tmp=str(tmp_path / "sbx"), **kw)
        made.append(h)
        return h

    yield make
    for h in made:
        h.close()


class _Handler(BaseHTTPRequestHandler):
    routes: dict[str, Any] = {}

    def log_message(self, *a: Any) -> None:
        pass

    def _handle(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        body = self.rfile.read(length) if length else b""
        route = self.server.routes.get(self.path.split("?")[0])  # type: ignore[attr-defined]
        if route is None:
            payload = json.dumps({"method": self.command, "path": self.path, "headers": dict(self.headers), "body": body.decode()}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Set-Cookie", "session=abc")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)
            return
        status, headers, payload = route
        self.send_response(status)
        for k, v in headers.items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = _handle


@pytest.fixture
def http_server():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    server.routes = {}  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()

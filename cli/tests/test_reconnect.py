"""The CLI rides out a web server restart (docs/ci.md "Commands and exit codes"): a refused
connection is tried again for any method, a connection broken after the request went out only for
a method that changes nothing, with a doubling wait bounded in total; exit codes are unchanged.
Tested against a real loopback HTTP server stopped and started again on the same port."""

from __future__ import annotations

import io
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import pytest
from agentclash_cli import runs
from agentclash_cli.client import Client, CliError, Config, reconnectable


class Restartable:
    """An HTTP server on one loopback port that can go away and come back (a web restart)."""

    def __init__(self, answer) -> None:
        self.answer = answer
        self.seen: list[tuple[str, str]] = []
        self.server: ThreadingHTTPServer | None = None
        self.port = 0

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def _any(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                if length:
                    self.rfile.read(length)
                outer.seen.append((self.command, self.path))
                data = json.dumps(outer.answer(self.command, self.path)).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = _any

            def log_message(self, format: str, *args: Any) -> None:
                pass

        return Handler

    def start(self) -> Restartable:
        ThreadingHTTPServer.allow_reuse_address = True
        self.server = ThreadingHTTPServer(("127.0.0.1", self.port), self._handler())
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True).start()
        return self

    def stop(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()
            self.server = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


def _client(url: str, notes: list[str], **kwargs: Any) -> Client:
    return Client(Config(url=url, token="act_x", workspace="acme"), note=notes.append, **kwargs)


def test_run_follow_rides_out_a_web_restart():
    polls = {"n": 0}

    def answer(method: str, path: str) -> dict[str, Any]:
        polls["n"] += 1
        status = "running" if polls["n"] < 3 else "completed"
        return {"id": 7, "status": status, "lanes": [], "progress": {}, "failure_reason": ""}

    server = Restartable(answer).start()
    notes: list[str] = []

    def sleep(seconds: float) -> None:  # at the follow's first pause, the web server goes down for 1.5 s
        if polls["n"] == 1 and server.server is not None:
            server.stop()
            threading.Timer(1.5, server.start).start()
        time.sleep(seconds)

    client = _client(server.url, notes, sleep=sleep)
    started = time.monotonic()
    try:
        run = runs.follow(client, 7, interval=0.1, out=io.StringIO())
    finally:
        server.stop()
    assert run["status"] == "completed"
    assert any("cannot reach" in note and "retrying GET" in note for note in notes), notes
    assert time.monotonic() - started < 20


def test_a_refused_post_is_sent_again_once_the_server_is_back():
    server = Restartable(lambda method, path: {"id": 1}).start()
    url = server.url
    server.stop()
    threading.Timer(1.0, server.start).start()
    notes: list[str] = []
    try:
        assert _client(url, notes).post("/api/v1/workspaces/acme/comparisons", {"a": 1}) == {"id": 1}
    finally:
        time.sleep(0.1)
        server.stop()
    assert [method for method, _ in server.seen] == ["POST"]  # sent once: the refused tries never reached it
    assert notes and "retrying POST" in notes[0]


def test_the_wait_is_bounded_then_the_command_fails_as_before():
    server = Restartable(lambda method, path: {}).start()
    url = server.url
    server.stop()  # and never comes back
    notes: list[str] = []
    slept: list[float] = []
    client = _client(url, notes, sleep=slept.append, reconnect_wait=10)
    with pytest.raises(CliError, match="cannot reach"):
        client.get("/api/v1/workspaces/acme/runs/1")
    assert slept == [0.5, 1.0, 2.0, 4.0] and sum(slept) <= 10  # doubling, and never past the bound


@pytest.mark.parametrize(
    ("error", "method", "again"),
    [
        (httpx.ConnectError("refused"), "POST", True),
        (httpx.ConnectError("refused"), "GET", True),
        (httpx.RemoteProtocolError("server disconnected"), "GET", True),
        (httpx.RemoteProtocolError("server disconnected"), "POST", False),  # it may have been done
        (httpx.ReadError("reset"), "PUT", False),
    ],
)
def test_only_a_request_that_cannot_have_been_done_twice_is_sent_again(error, method, again):
    assert reconnectable(error, method) is again

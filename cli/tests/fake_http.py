"""A scripted HTTP server on 127.0.0.1 for the CLI's retry and GitHub tests (never leaves loopback)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler
from typing import Any

from infrastructure.tests.loopback import serving

Reply = tuple[int, dict[str, str], Any]  # status, headers, JSON body
Route = Callable[[str, str, Any, dict[str, str]], Reply]  # (method, path, JSON body, headers) → reply


@contextmanager
def fake_server(route: Route) -> Iterator[tuple[str, list[tuple[str, str, Any, dict[str, str]]]]]:
    """Serve ``route`` on a free loopback port; yields the base URL and the requests it saw."""
    seen: list[tuple[str, str, Any, dict[str, str]]] = []

    class Handler(BaseHTTPRequestHandler):
        def _any(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            body = json.loads(raw) if raw else None
            headers = {k.lower(): v for k, v in self.headers.items()}
            seen.append((self.command, self.path, body, headers))
            status, extra, reply = route(self.command, self.path, body, headers)
            data = b"" if reply is None else json.dumps(reply).encode()
            self.send_response(status)
            for name, value in extra.items():
                self.send_header(name, value)
            if reply is not None:
                self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _any

        def log_message(self, format: str, *args: Any) -> None:  # keep test output quiet
            pass

    with serving(Handler) as url:
        yield url, seen


def scripted(replies: list[Reply], then: Reply) -> Route:
    """Answer ``replies`` in order, then ``then`` forever."""
    queue = list(replies)

    def route(method: str, path: str, body: Any, headers: dict[str, str]) -> Reply:
        return queue.pop(0) if queue else then

    return route

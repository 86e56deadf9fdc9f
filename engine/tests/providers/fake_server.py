"""A loopback HTTP server that replays canned responses and records requests (never leaves 127.0.0.1)."""

from __future__ import annotations

import dataclasses
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclasses.dataclass
class Reply:
    status: int = 200
    body: bytes = b""
    headers: dict[str, str] = dataclasses.field(default_factory=dict)
    delay: float = 0.0  # seconds to wait before answering

    @classmethod
    def json(cls, status: int, payload, headers: dict[str, str] | None = None) -> Reply:
        return cls(status, json.dumps(payload).encode(), {"Content-Type": "application/json", **(headers or {})})

    @classmethod
    def sse(cls, events: list[tuple[str | None, object]]) -> Reply:
        """``events`` = (event name or None, data dict or raw str)."""
        lines = []
        for name, data in events:
            if name:
                lines.append(f"event: {name}")
            lines.append(f"data: {data if isinstance(data, str) else json.dumps(data)}")
            lines.append("")
        return cls(200, ("\n".join(lines) + "\n").encode(), {"Content-Type": "text/event-stream"})


@dataclasses.dataclass
class Recorded:
    path: str
    headers: dict[str, str]
    body: dict


class FakeServer:
    def __init__(self) -> None:
        self.replies: list[Reply] = []
        self.requests: list[Recorded] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                server.requests.append(Recorded(self.path, {k.lower(): v for k, v in self.headers.items()}, json.loads(raw or b"{}")))
                reply = server.replies.pop(0) if server.replies else Reply.json(500, {"error": "no reply queued"})
                if reply.delay:
                    time.sleep(reply.delay)
                try:
                    self.send_response(reply.status)
                    for key, value in reply.headers.items():
                        self.send_header(key, value)
                    self.send_header("Content-Length", str(len(reply.body)))
                    self.send_header("Connection", "close")
                    self.end_headers()
                    self.wfile.write(reply.body)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout tests)

            def log_message(self, *args) -> None:
                pass

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    def __enter__(self) -> FakeServer:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

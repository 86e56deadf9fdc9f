"""The host-side egress proxy over its Unix socket, against loopback servers this module starts.

Loopback is refused by default; positive tests pass the operator's private allowlist
``127.0.0.0/8`` (as a plain value) and allowlist the test server in the pack policy.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator

import pytest

from engine.events import SANDBOX_EGRESS_ATTEMPTED, SANDBOX_EGRESS_DENIED
from engine.net.guard import EgressPolicy
from engine.net.proxy import EgressAttempt, EgressContent, EgressProxy, ProxyRequestError, egress_event, parse_request_head, proxy_env

LOOP = ["127.0.0.0/8"]


@pytest.fixture
def echo_server() -> Iterator[int]:
    """A raw TCP echo server on 127.0.0.1 (for CONNECT tunnels)."""
    server = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def serve() -> None:
        server.settimeout(0.05)
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            threading.Thread(target=_echo, args=(conn,), daemon=True).start()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield server.getsockname()[1]
    stop.set()
    thread.join(timeout=2)
    server.close()


def _echo(conn: socket.socket) -> None:
    with conn:
        while data := conn.recv(4096):
            conn.sendall(data)


class Proxy:
    def __init__(self, path: str, policy: EgressPolicy, **kw):
        self.attempts: list[EgressAttempt | EgressContent] = []
        self.proxy = EgressProxy(path, policy, self.attempts.append, **kw).start()

    def connect(self) -> socket.socket:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(10)
        sock.connect(self.proxy.socket_path)
        return sock

    def ask(self, data: bytes) -> bytes:
        with self.connect() as sock:
            try:
                sock.sendall(data)
            except BrokenPipeError:
                pass  # refused at accept: the response may still be readable
            return _read_all(sock)

    def settled(self) -> list[EgressAttempt]:
        self.proxy.settle(2)
        return [a for a in self.attempts if isinstance(a, EgressAttempt)]

    def contents(self) -> list[EgressContent]:
        self.proxy.settle(2)
        return [a for a in self.attempts if isinstance(a, EgressContent)]


def _read_all(sock: socket.socket) -> bytes:
    out = b""
    while chunk := sock.recv(65536):
        out += chunk
    return out


@pytest.fixture
def make_proxy(tmp_path):
    made: list[Proxy] = []

    def make(allowlist=(), private=(), **kw) -> Proxy:
        p = Proxy(str(tmp_path / f"egress{len(made)}"), EgressPolicy.build(allowlist, private), **kw)
        made.append(p)
        return p

    yield make
    for p in made:
        p.proxy.close()


def status(response: bytes) -> int:
    return int(response.split(b" ", 2)[1])


def test_forward_request_to_allowlisted_loopback_server(make_proxy, http_server):
    port = http_server.server_port
    p = make_proxy(["127.0.0.1/32"], LOOP)
    raw = f"GET http://127.0.0.1:{port}/hello?x=1 HTTP/1.1\r\nHost: evil.example\r\nProxy-Authorization: Basic eA==\r\n"
    response = p.ask((raw + "Proxy-Connection: keep-alive\r\nX-Test: yes\r\n\r\n").encode())
    assert status(response) == 200
    seen = json.loads(response.split(b"\r\n\r\n", 1)[1])
    assert seen["path"] == "/hello?x=1"
    headers = {k.lower(): v for k, v in seen["headers"].items()}
    assert headers["host"] == f"127.0.0.1:{port}" and headers["x-test"] == "yes" and headers["connection"] == "close"
    assert "proxy-authorization" not in headers and "proxy-connection" not in headers
    [attempt] = p.settled()
    assert (attempt.host, attempt.port, attempt.method, attempt.allowed, attempt.reason, attempt.address) == (
        "127.0.0.1",
        port,
        "GET",
        True,
        "allowed",
        "127.0.0.1",
    )


def test_loopback_is_refused_without_the_private_allowlist(make_proxy, http_server):
    port = http_server.server_port
    p = make_proxy(["127.0.0.0/8"])  # the pack asks, the operator did not allow it
    response = p.ask(f"GET http://127.0.0.1:{port}/ HTTP/1.1\r\n\r\n".encode())
    assert status(response) == 403 and b"loopback" in response
    [attempt] = p.settled()
    assert not attempt.allowed and attempt.reason == "loopback" and attempt.address == ""


def test_non_allowlisted_host_is_refused_and_recorded(make_proxy, http_server):
    port = http_server.server_port
    p = make_proxy(["127.0.0.1/32"], LOOP, resolver=lambda host, _: {"other.test": ["127.0.0.2"]}[host])
    assert status(p.ask(f"GET http://other.test:{port}/ HTTP/1.1\r\n\r\n".encode())) == 403
    assert status(p.ask(f"CONNECT 127.0.0.3:{port} HTTP/1.1\r\n\r\n".encode())) == 403
    assert [(a.host, a.method, a.allowed, a.reason) for a in p.settled()] == [
        ("other.test", "GET", False, "not_allowlisted"),
        ("127.0.0.3", "CONNECT", False, "not_allowlisted"),
    ]


def test_connect_tunnel_to_allowed_port(make_proxy, echo_server):
    p = make_proxy([f"127.0.0.1/32:{echo_server}"], LOOP)
    with p.connect() as sock:
        sock.sendall(f"CONNECT 127.0.0.1:{echo_server} HTTP/1.1\r\nHost: x\r\n\r\nearly".encode())
        got = b""
        sock.sendall(b"-more")
        while b"early-more" not in got:
            got += sock.recv(100)
        assert got == b"HTTP/1.1 200 Connection established\r\n\r\nearly-more"
    [attempt] = p.settled()
    assert attempt.allowed and attempt.method == "CONNECT" and attempt.port == echo_server


def test_connect_to_refused_port_is_refused(make_proxy, echo_server, http_server):
    p = make_proxy([f"127.0.0.1/32:{echo_server}"], LOOP)
    response = p.ask(f"CONNECT 127.0.0.1:{http_server.server_port} HTTP/1.1\r\n\r\n".encode())
    assert status(response) == 403 and b"port_not_allowed" in response
    assert p.settled()[0].reason == "port_not_allowed"


@pytest.mark.parametrize(
    "target,reason",
    [
        ("169.254.169.254:80", "metadata"),
        ("metadata.google.internal:80", "metadata"),
        ("[fd00:ec2::254]:80", "metadata"),
        ("10.0.0.1:443", "private"),
        ("192.168.1.1:443", "private"),
        ("172.16.0.1:443", "private"),
        ("100.64.0.1:443", "cgnat"),
        ("[fe80::1]:443", "link_local"),
        ("[fc00::1]:443", "private"),
        ("[::ffff:127.0.0.1]:6379", "ipv4_mapped"),
        ("0.0.0.0:5432", "unspecified"),
        ("2130706433:6379", "loopback"),
    ],
)
def test_internal_targets_are_refused_without_connecting(make_proxy, target, reason):
    resolved: list[str] = []

    def resolver(host: str, port: int) -> list[str]:
        resolved.append(host)
        return ["93.184.216.34"]

    p = make_proxy([], [], resolver=resolver)
    response = p.ask(f"CONNECT {target} HTTP/1.1\r\n\r\n".encode())
    assert status(response) == 403
    assert p.settled()[0].reason == reason and resolved == []


def test_dns_is_resolved_once_and_the_checked_address_is_used(make_proxy, http_server):
    answers = iter([["127.0.0.1"], ["10.0.0.1"]])  # a rebinding resolver: second answer never used
    calls: list[str] = []

    def rebinding(host: str, port: int) -> list[str]:
        calls.append(host)
        return next(answers)

    p = make_proxy(["127.0.0.1/32"], LOOP, resolver=rebinding)
    response = p.ask(f"GET http://rebind.test:{http_server.server_port}/r HTTP/1.1\r\n\r\n".encode())
    assert status(response) == 200 and calls == ["rebind.test"]
    assert json.loads(response.split(b"\r\n\r\n", 1)[1])["headers"]["Host"] == f"rebind.test:{http_server.server_port}"
    assert p.settled()[0].address == "127.0.0.1"


@pytest.mark.parametrize(
    "raw,code,reason",
    [
        (b"GET https://127.0.0.1/ HTTP/1.1\r\n\r\n", 400, "https_requires_connect"),
        (b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", 400, "not_a_proxy_request"),
        (b"GET ftp://127.0.0.1/ HTTP/1.1\r\n\r\n", 400, "not_a_proxy_request"),
        (b"GET http://u:p@127.0.0.1/ HTTP/1.1\r\n\r\n", 400, "credentials_in_url"),
        (b"GET http://127.0.0.1/ HTTP/1.1\r\nX: a\nInjected: b\r\n\r\n", 400, "bad_request"),
        (b"GET http://127.0.0.1/ HTTP/1.1\r\nX: a\r\n folded\r\n\r\n", 400, "bad_request"),
        (b"CONNECT 127.0.0.1 HTTP/1.1\r\n\r\n", 400, "bad_request"),
        (b"CONNECT 127.0.0.1:0 HTTP/1.1\r\n\r\n", 400, "bad_port"),
        (b"CONNECT bad_host!:80 HTTP/1.1\r\n\r\n", 400, "bad_host"),
        (b"GET http://127.0.0.1/ HTTP/2.0\r\n\r\n", 400, "bad_request"),
        (b"\xff\xfe HTTP/1.1\r\n\r\n", 400, "bad_request"),
    ],
)
def test_malformed_requests_are_refused_and_recorded(make_proxy, raw, code, reason):
    p = make_proxy(["0.0.0.0/0"], LOOP)
    response = p.ask(raw)
    assert status(response) == code
    attempt = p.settled()[0]
    assert not attempt.allowed and attempt.reason == reason


def test_header_size_is_bounded(make_proxy):
    p = make_proxy(["127.0.0.0/8"], LOOP, max_header_bytes=1024)
    response = p.ask(b"GET http://127.0.0.1/ HTTP/1.1\r\nX: " + b"a" * 5000 + b"\r\n\r\n")
    assert status(response) == 431 and p.settled()[0].reason == "header_too_large"


def test_slow_request_head_times_out(make_proxy):
    p = make_proxy(["127.0.0.0/8"], LOOP, header_timeout=0.3)
    with p.connect() as sock:
        sock.sendall(b"GET http://127.0.0.1/ HTTP/1.1\r\n")
        started = time.monotonic()
        assert status(_read_all(sock)) == 408
        assert time.monotonic() - started < 3
    assert p.settled()[0].reason == "header_timeout"


def test_concurrent_connections_are_bounded(make_proxy):
    p = make_proxy(["127.0.0.0/8"], LOOP, max_connections=2, header_timeout=5)
    idle = [p.connect(), p.connect()]
    try:
        time.sleep(0.1)
        response = p.ask(b"CONNECT 127.0.0.1:80 HTTP/1.1\r\n\r\n")
        assert status(response) == 503 and b"connection_limit" in response
    finally:
        for sock in idle:
            sock.close()


def test_attempts_are_bounded(make_proxy):
    p = make_proxy([], [], max_attempts=2)
    for _ in range(4):
        p.ask(b"CONNECT 10.0.0.1:80 HTTP/1.1\r\n\r\n")
    assert [a.reason for a in p.settled()] == ["private", "private", "attempt_limit"]  # then silence


def test_close_cuts_open_tunnels_and_removes_the_socket(make_proxy, echo_server):
    p = make_proxy([f"127.0.0.1/32:{echo_server}"], LOOP)
    sock = p.connect()
    sock.sendall(f"CONNECT 127.0.0.1:{echo_server} HTTP/1.1\r\n\r\n".encode())
    assert sock.recv(100).startswith(b"HTTP/1.1 200")
    started = time.monotonic()
    p.proxy.close()
    assert time.monotonic() - started < 2
    assert _read_all(sock) == b""
    sock.close()
    with pytest.raises(OSError):
        p.connect()


def test_request_head_parsing():
    req = parse_request_head(b"POST http://Example.COM:8080/a/b?q=1#frag HTTP/1.1\r\nConnection: X-Drop\r\nX-Drop: 1\r\nX-Keep: 2")
    assert (req.method, req.host, req.port, req.path) == ("POST", "example.com", 8080, "/a/b?q=1")
    head = req.origin_head().decode()
    assert head.startswith("POST /a/b?q=1 HTTP/1.1\r\nHost: example.com:8080\r\n")
    assert "X-Keep: 2" in head and "X-Drop" not in head and head.endswith("Connection: close\r\n\r\n")
    v6 = parse_request_head(b"CONNECT [2001:db8::1]:443 HTTP/1.1")
    assert (v6.host, v6.port) == ("2001:db8::1", 443)
    with pytest.raises(ProxyRequestError):
        parse_request_head(b"CONNECT host:99999 HTTP/1.1")


def test_attempts_become_engine_events_with_redacted_hosts():
    denied = egress_event(
        EgressAttempt("secret-value.attacker.test", 443, "CONNECT", False, "not_allowlisted"),
        lane_id="7",
        case_key="c1",
        redact=lambda s: s.replace("secret-value", "[redacted]"),
    )
    assert denied.event_type == SANDBOX_EGRESS_DENIED and denied.case_key == "c1"
    assert denied.payload["host"] == "[redacted].attacker.test" and denied.payload["decision"] == "denied"
    allowed = egress_event(EgressAttempt("api.test", 443, "CONNECT", True, "allowed", "93.184.216.34"))
    assert allowed.event_type == SANDBOX_EGRESS_ATTEMPTED and allowed.payload["address"] == "93.184.216.34"
    assert allowed.occurred_at.endswith("Z")


def test_proxy_env_points_clients_at_the_in_sandbox_relay():
    env = proxy_env()
    assert env["HTTPS_PROXY"] == env["http_proxy"] == "http://127.0.0.1:3128"
    assert "127.0.0.1" in env["NO_PROXY"]  # the sandbox's own loopback stays direct


def test_connect_and_close_is_not_an_attempt(make_proxy):
    p = make_proxy([], [])
    p.connect().close()
    p.ask(b"CONNECT 10.0.0.1:80 HTTP/1.1\r\n\r\n")
    assert [a.reason for a in p.settled()] == ["private"]

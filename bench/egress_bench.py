"""Sandbox egress cost (not a test): time to first byte through the egress proxy vs direct.

Everything talks to a loopback HTTP server this script starts (the operator's private allowlist
``127.0.0.0/8`` is passed in as a plain value so the proxy lets it through). Each request opens a
new connection, sends one GET and stops the clock at the first response byte.

(a) host, direct TCP                              baseline
(b) host, through the EgressProxy's Unix socket   proxy cost (parse, policy, connect, relay)
(c) inside the sandbox, HTTP_PROXY=127.0.0.1:3128 the whole path: relay thread -> Unix socket ->
    proxy -> server; compared with (a) measured by the same code on the host
(d) first exec of a fresh sandbox with and without network (netns + proxy + relay start)
(e) content inspection (issue 23): the proxy's inspector on request bodies of 1, 16 and 64 KiB
    (target: under 1 ms per request under 64 KiB), and POSTs of 64 KiB through the proxy with and
    without an inspector, interleaved (ratio against the no-inspection baseline)

Run: .venv/bin/python bench/egress_bench.py
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from engine.net.guard import EgressPolicy
from engine.net.proxy import EgressProxy, InspectedRequest
from engine.sandbox import SandboxConfig, create_sandbox, native
from engine.scoring.security import SecurityPolicy
from engine.tools.egress_watch import ContentInspector

LAUNCHER_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "var", "launcher")  # make setup builds it there
N = 300
PRIVATE = ["127.0.0.0/8"]

# Runs both on the host (system python) and in the sandbox: argv = mode host port n.
CLIENT = r"""
import json, socket, sys, time
mode, host, port, n = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
out = []
for i in range(n + 5):
    t = time.perf_counter()
    if mode == "direct":
        s = socket.create_connection((host, port))
        s.sendall(b"GET /x HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n" % host.encode())
    else:
        s = socket.create_connection(("127.0.0.1", 3128))
        s.sendall(b"GET http://%s:%d/x HTTP/1.1\r\nConnection: close\r\n\r\n" % (host.encode(), port))
    s.recv(1)
    dt = time.perf_counter() - t
    while s.recv(65536):
        pass
    s.close()
    if i >= 5:
        out.append(dt)
print(json.dumps(out))
"""


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.do_GET()

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")

    def log_message(self, *args: object) -> None:
        pass


def summary(name: str, samples: list[float]) -> float:
    med = statistics.median(samples)
    p90 = sorted(samples)[int(len(samples) * 0.9)]
    print(f"{name:<58} median {med * 1e3:7.3f} ms   p90 {p90 * 1e3:7.3f} ms")
    return med


def ttfb_direct(port: int) -> float:
    t = time.perf_counter()
    with socket.create_connection(("127.0.0.1", port)) as s:
        s.sendall(b"GET /x HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        s.recv(1)
        dt = time.perf_counter() - t
        while s.recv(65536):
            pass
    return dt


def ttfb_proxy(path: str, port: int) -> float:
    t = time.perf_counter()
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.connect(path)
        s.sendall(b"GET http://127.0.0.1:%d/x HTTP/1.1\r\nConnection: close\r\n\r\n" % port)
        s.recv(1)
        dt = time.perf_counter() - t
        while s.recv(65536):
            pass
    return dt


POLICY = SecurityPolicy.from_block(
    {
        "planted_secrets": [
            {"name": "CANARY_ENV", "value": "agentclash-canary-Q5R4S3T2-9f2b71a4c8", "location": "env"},
            {"name": "CANARY_FILE", "value": "AKIAZ7QF3XK2M9PLW4TR", "location": "file", "file_path": "creds.txt"},
            {"name": "CANARY_TOOL", "value": "ghp_4f9a1c7e2b8d6a0f3e5c9b1d7a2f8e4c6b0d", "location": "tool-output"},
        ]
    }
)
SECRETS = {"API_TOKEN": "wsk-7d1e0c9b8a6f5e4d3c2b", "DB_PASSWORD": "hunter2-but-longer-9f8e"}


def body(size: int) -> bytes:
    """JSON-ish text like an agent's upload: words, numbers, keys (no planted value)."""
    row = b'{"id": 12345, "name": "widget-alpha", "note": "the quick brown fox jumps", "tags": ["a", "b"]},\n'
    return (row * (size // len(row) + 1))[:size]


def inspection_bench(port: int) -> None:
    inspector = ContentInspector(POLICY, SECRETS, {})
    for size in (1024, 16 * 1024, 64 * 1024):
        head = b"POST http://127.0.0.1/upload HTTP/1.1\r\nContent-Type: application/json\r\n\r\n"
        request = InspectedRequest("127.0.0.1", port, "POST", head + body(size))
        for _ in range(20):
            inspector(request)
        samples, cpu = [], []
        for _ in range(200):
            t, c = time.perf_counter(), time.thread_time()
            inspector(request)
            samples.append(time.perf_counter() - t)
            cpu.append(time.thread_time() - c)
        summary(f"(e) inspector, {size // 1024:>2} KiB request, wall", samples)
        med = summary("    the same, CPU time of the inspecting thread", cpu)
        print(f"    {'under' if med < 1e-3 else 'OVER'} the 1 ms target (CPU; wall time counts a loaded host's waits)")
    leaky = InspectedRequest("127.0.0.1", port, "POST", body(60 * 1024) + b"agentclash-canary-Q5R4S3T2-9f2b71a4c8")
    print(f"    a 60 KiB body ending in the canary: {inspector(leaky)}")

    timed: list[float] = []

    def timed_inspector(request: InspectedRequest) -> tuple[str, ...]:
        t = time.perf_counter()
        try:
            return inspector(request)
        finally:
            timed.append(time.perf_counter() - t)

    tmp = tempfile.mkdtemp(prefix="egress-bench-")
    policy = EgressPolicy.build(["127.0.0.1/32"], PRIVATE)
    plain = EgressProxy(os.path.join(tmp, "plain"), policy).start()
    inspected = EgressProxy(os.path.join(tmp, "inspected"), policy, inspector=timed_inspector).start()
    payload = body(64 * 1024)
    raw_request = b"POST http://127.0.0.1:%d/up HTTP/1.1\r\nContent-Length: %d\r\nConnection: close\r\n\r\n" % (port, len(payload))

    def post(path: str) -> float:
        t = time.perf_counter()
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.connect(path)
            s.sendall(raw_request + payload)
            while s.recv(65536):
                pass
        return time.perf_counter() - t

    try:
        for _ in range(10):
            post(plain.socket_path), post(inspected.socket_path)
        timed.clear()
        pairs = []
        for _ in range(N):
            pairs.append((post(plain.socket_path), post(inspected.socket_path)))
            inspected.settle(1)
        off = summary("(e) 64 KiB POST through the proxy, no inspection", [a for a, _ in pairs])
        on = summary("    64 KiB POST through the proxy, inspected", [b for _, b in pairs])
        cost = summary("    inspection inside the proxy (per request)", timed)
        print(f"    inspection ratio {on / off:.2f}x end to end; inspector {cost * 1e3:.3f} ms per 64 KiB request")
    finally:
        plain.close()
        inspected.close()
        shutil.rmtree(tmp, ignore_errors=True)


def main() -> int:
    native.DEFAULT_DIR = LAUNCHER_DIR  # the default SandboxSettings() has no launcher dir (as sandbox_bench.py)
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_port
    policy = EgressPolicy.build(["127.0.0.1/32"], PRIVATE)
    tmp = tempfile.mkdtemp(prefix="egress-bench-")
    proxy = EgressProxy(os.path.join(tmp, "egress"), policy).start()
    try:
        for _ in range(10):
            ttfb_direct(port), ttfb_proxy(proxy.socket_path, port)
        pairs = [(ttfb_direct(port), ttfb_proxy(proxy.socket_path, port)) for _ in range(N)]  # interleaved
        direct = summary("(a) host direct TCP", [a for a, _ in pairs])
        via = summary("(b) host through EgressProxy (Unix socket)", [b for _, b in pairs])
        print(f"    proxy ratio {via / direct:.2f}x, +{(via - direct) * 1e3:.3f} ms per connection")
    finally:
        proxy.close()
        shutil.rmtree(tmp, ignore_errors=True)
    inspection_bench(port)
    if "--inspection-only" in sys.argv:
        return 0

    if shutil.which("bwrap") is None:
        print("(c), (d) skipped: bubblewrap not installed")
        return 0
    host_py = subprocess.run(
        ["/usr/bin/python3", "-c", CLIENT, "direct", "127.0.0.1", str(port), str(N)], capture_output=True, text=True, check=True
    )
    base = summary("(c) host direct, same client code (system python)", json.loads(host_py.stdout))
    cfg = SandboxConfig(allow_network=True, network_allowlist=("127.0.0.1/32",))
    cfg.apply_operator_network("allowlist", PRIVATE)
    sandbox = create_sandbox(cfg)
    try:
        result = sandbox.exec(["python3", "-c", CLIENT, "proxy", "127.0.0.1", str(port), str(N)], timeout=120)
        if result.exit_code != 0:
            print(result.stderr)
            return 1
        inside = summary("    in sandbox via relay + EgressProxy", json.loads(result.stdout))
        print(f"    sandbox egress ratio {inside / base:.2f}x, +{(inside - base) * 1e3:.3f} ms per connection")
    finally:
        sandbox.destroy()

    def first_exec(network: bool) -> float:
        c = SandboxConfig(allow_network=network, network_allowlist=("127.0.0.1/32",))
        c.apply_operator_network("allowlist", PRIVATE)
        t = time.perf_counter()
        sb = create_sandbox(c)
        sb.exec(["true"])
        dt = time.perf_counter() - t
        sb.destroy()
        return dt

    starts = [(first_exec(False), first_exec(True)) for _ in range(20)]  # interleaved: the host is noisy
    off = summary("(d) first exec of a fresh sandbox, no network", [a for a, _ in starts])
    on = summary("    first exec of a fresh sandbox, network via proxy", [b for _, b in starts])
    print(f"    start-up cost of egress +{(on - off) * 1e3:.1f} ms")
    server.shutdown()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

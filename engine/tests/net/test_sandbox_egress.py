"""Egress from inside the sandbox: own network namespace, proxy only, every attempt recorded.

Every server here is a loopback server this module starts on the host. The sandbox cannot reach
the host's loopback directly (its own netns); through the proxy it reaches the test server only
when the pack allowlists it AND the operator's private allowlist (a plain value) covers 127/8.
"""

from __future__ import annotations

import json
import os
import socket

import pytest

from engine.events import SANDBOX_EGRESS_ATTEMPTED, SANDBOX_EGRESS_DENIED
from engine.net.proxy import EgressAttempt, EgressContent
from engine.sandbox import SandboxConfig, create_sandbox
from engine.tests.tools.support import manifest, requires_bwrap
from engine.types import Event

PY_GET = (
    "import sys, urllib.request, urllib.error\n"
    "try:\n"
    "    print(urllib.request.urlopen(sys.argv[1], timeout=10).read().decode())\n"
    "except urllib.error.HTTPError as e:\n"
    "    print('HTTP', e.code, e.read().decode().strip()); sys.exit(3)\n"
)
PY_RAW = (
    "import socket, sys\n"
    "try:\n"
    "    socket.create_connection(('127.0.0.1', int(sys.argv[1])), timeout=3)\n"
    "except OSError as e:\n"
    "    print('refused', e.errno); sys.exit(4)\n"
    "print('connected')\n"
)
PY_CONNECT = (
    "import socket, sys\n"
    "s = socket.create_connection(('127.0.0.1', 3128), timeout=5)\n"
    "s.sendall(('CONNECT %s HTTP/1.1\\r\\nHost: %s\\r\\n\\r\\n' % (sys.argv[1], sys.argv[1])).encode())\n"
    "print(s.recv(200).decode().split('\\r\\n')[0])\n"
)


def _sandbox(allowlist=(), private=(), *, network=True, mode="allowlist", resolver=None):
    cfg = SandboxConfig(allow_shell=True, allow_network=network, network_allowlist=tuple(allowlist))
    cfg.apply_operator_network(mode, private)
    sb = create_sandbox(cfg)
    sb.egress_resolver = resolver
    attempts: list[EgressAttempt | EgressContent] = []
    sb.egress_listener = attempts.append
    return sb, attempts


@pytest.fixture
def sandboxes():
    made = []

    def make(*a, **kw):
        sb, attempts = _sandbox(*a, **kw)
        made.append(sb)
        return sb, attempts

    yield make
    for sb in made:
        sb.destroy()


def run_py(sb, code, *args, env=None):
    return sb.exec(["python3", "-c", code, *map(str, args)], env=env, timeout=30)


NO_BYPASS = {"NO_PROXY": "", "no_proxy": ""}  # the test server is on the HOST's 127.0.0.1


@requires_bwrap
def test_raw_tcp_to_host_loopback_has_no_route_even_with_network(sandboxes, http_server):
    sb, attempts = sandboxes(["127.0.0.0/8"], ["127.0.0.0/8"])
    result = run_py(sb, PY_RAW, http_server.server_port)
    assert result.exit_code == 4 and "refused" in result.stdout, result
    names = [line.split(":")[0].strip() for line in sb.exec(["cat", "/proc/net/dev"]).stdout.splitlines()[2:]]
    assert names == ["lo"]
    assert attempts == []  # never reached the proxy


@requires_bwrap
def test_host_abstract_unix_sockets_are_out_of_reach(sandboxes):
    # Abstract Unix sockets belong to the network namespace: a sandbox with network must not reach
    # the host's (D-Bus, X11, container runtimes…).
    name = f"agentclash-canary-{os.getpid()}-{id(sandboxes)}"
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind("\0" + name)
    server.listen(1)
    try:
        sb, _ = sandboxes(["127.0.0.0/8"], ["127.0.0.0/8"])
        code = "import socket, sys\ns = socket.socket(socket.AF_UNIX)\ns.connect('\\0' + sys.argv[1])\nprint('connected')"
        result = run_py(sb, code, name)
        assert result.exit_code != 0 and "connected" not in result.stdout, result
    finally:
        server.close()


@requires_bwrap
def test_proxied_request_to_allowlisted_loopback_server_succeeds(sandboxes, http_server):
    port = http_server.server_port
    sb, attempts = sandboxes([f"127.0.0.1/32:{port}"], ["127.0.0.0/8"], resolver=lambda host, _: {"canary.test": ["127.0.0.1"]}[host])
    by_name = run_py(sb, PY_GET, f"http://canary.test:{port}/hello")
    assert by_name.exit_code == 0 and json.loads(by_name.stdout)["path"] == "/hello", by_name
    by_ip = run_py(sb, PY_GET, f"http://127.0.0.1:{port}/ip", env=NO_BYPASS)
    assert by_ip.exit_code == 0 and json.loads(by_ip.stdout)["path"] == "/ip", by_ip
    curl = sb.exec(["curl", "-sS", "-m", "10", f"http://canary.test:{port}/curl"])
    assert curl.exit_code == 0 and json.loads(curl.stdout)["path"] == "/curl", curl
    assert [(a.host, a.port, a.method, a.allowed, a.address) for a in attempts] == [
        ("canary.test", port, "GET", True, "127.0.0.1"),
        ("127.0.0.1", port, "GET", True, "127.0.0.1"),
        ("canary.test", port, "GET", True, "127.0.0.1"),
    ]


@requires_bwrap
def test_loopback_server_is_refused_without_the_private_allowlist(sandboxes, http_server):
    port = http_server.server_port
    sb, attempts = sandboxes(["127.0.0.0/8"], [])  # the pack asks; the operator never allowed it
    result = run_py(sb, PY_GET, f"http://127.0.0.1:{port}/x", env=NO_BYPASS)
    assert result.exit_code == 3 and "HTTP 403" in result.stdout and "loopback" in result.stdout
    assert [(a.allowed, a.reason) for a in attempts] == [(False, "loopback")]


@requires_bwrap
def test_non_allowlisted_host_is_refused_and_recorded(sandboxes, http_server):
    port = http_server.server_port
    sb, attempts = sandboxes(["127.0.0.1/32"], ["127.0.0.0/8"], resolver=lambda host, _: {"elsewhere.test": ["127.0.0.2"]}[host])
    result = run_py(sb, PY_GET, f"http://elsewhere.test:{port}/x")
    assert result.exit_code == 3 and "HTTP 403" in result.stdout
    metadata = run_py(sb, PY_GET, "http://169.254.169.254/latest/meta-data/")
    assert metadata.exit_code == 3 and "metadata" in metadata.stdout
    assert [(a.host, a.allowed, a.reason) for a in attempts] == [
        ("elsewhere.test", False, "not_allowlisted"),
        ("169.254.169.254", False, "metadata"),
    ]


@requires_bwrap
def test_connect_to_refused_port_is_refused(sandboxes, http_server):
    port = http_server.server_port
    sb, attempts = sandboxes([f"127.0.0.1/32:{port}"], ["127.0.0.0/8"])
    other = socket.socket()
    other.bind(("127.0.0.1", 0))  # a port nobody may reach (never listening)
    try:
        refused = run_py(sb, PY_CONNECT, f"127.0.0.1:{other.getsockname()[1]}")
        allowed = run_py(sb, PY_CONNECT, f"127.0.0.1:{port}")
    finally:
        other.close()
    assert refused.stdout.strip() == "HTTP/1.1 403 Forbidden", refused
    assert allowed.stdout.strip() == "HTTP/1.1 200 Connection established", allowed
    assert [(a.method, a.allowed, a.reason) for a in attempts] == [("CONNECT", False, "port_not_allowed"), ("CONNECT", True, "allowed")]


@requires_bwrap
def test_operator_network_off_lets_nothing_out_whatever_the_pack_asks(sandboxes, http_server):
    port = http_server.server_port
    sb, attempts = sandboxes(["127.0.0.0/8"], ["127.0.0.0/8"], mode="off")
    assert not sb.allow_network and not sb.egress_enabled
    env = sb.exec(["env"]).stdout
    assert "PROXY" not in env.upper()
    assert run_py(sb, PY_RAW, 3128).exit_code == 4  # no relay inside
    assert run_py(sb, PY_RAW, port).exit_code == 4
    proxied = run_py(sb, PY_GET, f"http://127.0.0.1:{port}/x", env={"HTTP_PROXY": "http://127.0.0.1:3128", **NO_BYPASS})
    assert proxied.exit_code != 0
    assert sb.exec(["ls", "/run/agentclash-egress"]).exit_code != 0
    assert not os.path.exists(os.path.join(sb.dir, "egress"))
    assert attempts == []


@requires_bwrap
def test_operator_off_also_refuses_http_request(harness_factory, http_server):
    m = manifest(["network"], network=True, allowlist=["127.0.0.0/8"])
    h = harness_factory(m, network_mode="off")
    result = h.call("http_request", {"method": "GET", "url": f"http://127.0.0.1:{http_server.server_port}/"})
    assert result.is_error and result.failure_origin == "policy"


@requires_bwrap
def test_http_request_needs_the_private_allowlist_too(harness_factory, http_server):
    m = manifest(["network"], network=True, allowlist=["127.0.0.0/8"])
    h = harness_factory(m, private_allowlist=())
    assert h.error("http_request", {"method": "GET", "url": f"http://127.0.0.1:{http_server.server_port}/"}) == (
        "target host is blocked by network policy"
    )


@requires_bwrap
def test_no_network_pack_gets_no_proxy(sandboxes):
    sb, _ = sandboxes(network=False)
    assert "PROXY" not in sb.exec(["env"]).stdout.upper()
    assert sb.exec(["ls", "/run/agentclash-egress"]).exit_code != 0


@requires_bwrap
def test_sandbox_own_loopback_still_works_directly(sandboxes):
    sb, attempts = sandboxes(["127.0.0.0/8"], [])
    code = (
        "import socket\n"
        "s = socket.create_server(('127.0.0.1', 0)); port = s.getsockname()[1]\n"
        "c = socket.create_connection(('127.0.0.1', port), timeout=3); a, _ = s.accept()\n"
        "c.sendall(b'ping'); print(a.recv(4).decode())\n"
    )
    result = run_py(sb, code)
    assert result.stdout.strip() == "ping", result
    assert "localhost" in sb.exec(["cat", "/etc/hosts"]).stdout
    assert attempts == []


@requires_bwrap
def test_agent_cannot_exhaust_the_relay(sandboxes):
    sb, _ = sandboxes(["127.0.0.0/8"], [])
    code = (
        "import socket\n"
        "held = []\n"
        "for _ in range(200):\n"
        "    try:\n"
        "        held.append(socket.create_connection(('127.0.0.1', 3128), timeout=2))\n"
        "    except OSError:\n"
        "        break\n"
        "print(len(held))\n"
    )
    assert run_py(sb, code).exit_code == 0
    # The command's processes are gone: the relay and the proxy serve the next command normally.
    again = run_py(sb, PY_CONNECT, "10.0.0.1:80")
    assert again.stdout.strip() == "HTTP/1.1 403 Forbidden", again


@requires_bwrap
def test_attempts_become_events_through_the_toolset(harness_factory, http_server):
    events: list[Event] = []
    port = http_server.server_port
    m = manifest(["network", "build"], shell=True, network=True, allowlist=[f"127.0.0.1/32:{port}"])
    h = harness_factory(m, event_sink=events.append, lane_id="9", case_key="case-1")
    code = f"import urllib.request as u\nfor p in ({port}, {port + 1 if port < 65535 else port - 1}):\n"
    code += "    try: u.urlopen('http://127.0.0.1:%d/' % p, timeout=5)\n    except Exception as e: print(e)\n"
    result = h.call("exec", {"command": ["python3", "-c", code], "environment": NO_BYPASS})
    assert not result.is_error, result
    egress = [e for e in events if e.event_type.startswith("sandbox.egress.")]
    assert [e.event_type for e in egress] == [SANDBOX_EGRESS_ATTEMPTED, SANDBOX_EGRESS_DENIED]
    assert egress[0].payload["port"] == port and egress[0].payload["decision"] == "allowed"
    assert egress[1].payload["reason"] == "port_not_allowed" and egress[1].case_key == "case-1"


@requires_bwrap
def test_destroy_stops_the_proxy(sandboxes, http_server):
    sb, _ = sandboxes(["127.0.0.0/8"], ["127.0.0.0/8"])
    sb.exec(["true"])
    socket_dir = sb._proxy.socket_dir  # in the skeleton's neutral directory, not under sb.dir (rootfs.py)
    assert os.path.exists(os.path.join(socket_dir, "proxy.sock")) and not socket_dir.startswith(sb.dir)
    sb.destroy()
    assert not os.path.exists(socket_dir)

"""${secrets.KEY} goes only to the secret's allowed hosts and the pack's allowlist; redirects never carry it
to another origin. Every server here is a loopback server the test starts (two ports = two origins)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from engine.tests.tools.support import manifest

SECRET = "vault-tok-5e6f7a8b9c0d1e2f"
LOOP = ["127.0.0.0/8"]


class _Recorder(BaseHTTPRequestHandler):
    def log_message(self, *a: Any) -> None:
        pass

    def _handle(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        body = self.rfile.read(length) if length else b""
        server: Any = self.server
        server.seen.append({"method": self.command, "path": self.path, "headers": dict(self.headers), "body": body.decode()})
        status, headers = server.routes.get(self.path.split("?")[0], (200, {}))
        payload = b'{"ok": true}'
        self.send_response(status)
        for k, v in headers.items():
            self.send_header(k, v)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    do_GET = do_POST = do_PUT = _handle


@pytest.fixture
def servers() -> Iterator[tuple[Any, Any]]:
    made = []
    for _ in range(2):
        server: Any = ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
        server.routes, server.seen = {}, []
        threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()
        made.append(server)
    yield made[0], made[1]
    for server in made:
        server.shutdown()
        server.server_close()


def origin(server: Any, host: str = "127.0.0.1") -> str:
    return f"http://{host}:{server.server_port}"


def api_tool(url: str, *, method: str = "POST", headers: dict[str, str] | None = None, body: str | None = "k=${secrets.TOKEN}") -> dict:
    args: dict[str, Any] = {
        "method": method,
        "url": url,
        "headers": headers if headers is not None else {"Authorization": "Bearer ${secrets.TOKEN}"},
    }
    if body is not None:
        args["body"] = body
    return {
        "custom": [
            {
                "name": "api",
                "description": "calls the API",
                "parameters": {"type": "object", "properties": {}, "additionalProperties": False},
                "implementation": {"primitive": "http_request", "args": args},
            }
        ]
    }


def build(harness_factory, tools: dict, hosts: list[str] | None, allowlist: list[str] | None = LOOP, **kw: Any):
    m = manifest(["network"], network=True, allowlist=allowlist, tools=tools)
    secret_hosts = {"TOKEN": hosts} if hosts is not None else {}
    return harness_factory(m, secrets={"TOKEN": SECRET}, secret_hosts=secret_hosts, **kw)


def test_a_secret_reaches_a_host_it_is_bound_to(harness_factory, servers):
    a, _ = servers
    h = build(harness_factory, api_tool(origin(a) + "/v1"), [f"127.0.0.1:{a.server_port}"])
    result = h.call("api", {})
    assert not result.is_error, result.content
    [seen] = a.seen
    assert seen["headers"]["Authorization"] == f"Bearer {SECRET}" and seen["body"] == f"k={SECRET}"
    assert SECRET not in result.content


def test_a_secret_without_allowed_hosts_is_never_sent(harness_factory, servers):
    a, _ = servers
    h = build(harness_factory, api_tool(origin(a) + "/v1"), None)
    assert any('secret "TOKEN" has no allowed hosts' in w for w in h.toolset.warnings)
    message = h.error("api", {})
    assert message.startswith('api failed: secret "TOKEN" was not sent: it has no allowed hosts')
    assert "workspace admin" in message and SECRET not in message
    assert a.seen == []


@pytest.mark.parametrize(
    "hosts",
    [
        ["api.example.com"],  # another host
        ["127.0.0.1:1"],  # the right host, another port
        ["*.1"],  # not a valid pattern (an admin cannot enter it): matches nothing, not 127.0.0.1
    ],
)
def test_a_destination_outside_the_allowed_hosts_is_refused_before_connecting(harness_factory, servers, hosts):
    a, _ = servers
    h = build(harness_factory, api_tool(origin(a) + "/v1"), hosts)
    message = h.error("api", {})
    assert (
        message == f'api failed: secret "TOKEN" was not sent: the destination (127.0.0.1:{a.server_port}) is not one of its allowed hosts'
    )
    assert a.seen == []


def test_an_allowed_host_still_needs_the_packs_allowlist(harness_factory, servers):
    a, _ = servers
    h = build(harness_factory, api_tool(origin(a) + "/v1"), [f"127.0.0.1:{a.server_port}"], allowlist=["10.0.0.0/8"])
    message = h.error("api", {})
    assert message.startswith('api failed: secret "TOKEN" was not sent: the pack\'s network policy refuses the destination')
    assert a.seen == []


def test_wildcard_hosts_match_subdomains_by_name_not_the_apex(harness_factory, servers):
    a, _ = servers
    tools = {
        "custom": [
            {
                "name": name,
                "description": "d",
                "implementation": {
                    "primitive": "http_request",
                    "args": {"method": "GET", "url": f"http://{host}:{a.server_port}/x", "headers": {"X-Key": "${secrets.TOKEN}"}},
                },
            }
            for name, host in [("sub", "api.example.test"), ("deep", "a.b.example.test"), ("apex", "example.test")]
        ]
    }
    h = build(harness_factory, tools, [f"*.example.test:{a.server_port}"], resolver=lambda host, port: ["127.0.0.1"])
    assert not h.call("sub", {}).is_error and not h.call("deep", {}).is_error
    assert "is not one of its allowed hosts" in h.error("apex", {})
    assert [s["headers"]["Host"].split(":")[0] for s in a.seen] == ["api.example.test", "a.b.example.test"]


def test_the_value_never_shows_in_a_refusal_even_in_the_url(harness_factory, servers):
    a, _ = servers
    tools = api_tool(f"http://127.0.0.1:{a.server_port}/v1?key=${{secrets.TOKEN}}", headers={})
    h = build(harness_factory, tools, ["api.example.com"])
    result = h.call("api", {})
    assert result.is_error and SECRET not in result.content and a.seen == []


# -- redirects -------------------------------------------------------------------------------


SECRET_HEADERS = {
    "Authorization": "Bearer ${secrets.TOKEN}",
    "X-Vault-Token": "${secrets.TOKEN}",
    "Private-Token": "${secrets.TOKEN}",
    "X-Plain": "not-a-secret",
}


@pytest.mark.parametrize("status", [301, 302, 303, 307, 308])
def test_a_secret_bearing_request_follows_no_redirect_to_another_origin(harness_factory, servers, status):
    a, b = servers
    a.routes["/hop"] = (status, {"Location": origin(b) + "/landing"})
    h = build(harness_factory, api_tool(origin(a) + "/hop", headers=SECRET_HEADERS), [f"127.0.0.1:{a.server_port}"])
    message = h.error("api", {})
    assert f"refused a {status} redirect to another origin: the request carried a secret" in message
    assert len(a.seen) == 1 and b.seen == []  # the second origin never sees a byte of it


@pytest.mark.parametrize("status", [301, 302, 303])
def test_a_secret_in_the_url_is_not_carried_by_a_redirect_that_keeps_the_query(harness_factory, servers, status):
    # issue 23: the approved host answers a cross-origin redirect keeping ?key=…; headers and body
    # were dropped but the URL went on to the unapproved host.
    a, b = servers
    a.routes["/v1"] = (status, {"Location": origin(b) + f"/landing?key={SECRET}"})
    tools = api_tool(origin(a) + "/v1?key=${secrets.TOKEN}", method="GET", headers={}, body=None)
    h = build(harness_factory, tools, [f"127.0.0.1:{a.server_port}"])
    message = h.error("api", {})
    assert "redirect to another origin: the request carried a secret" in message and SECRET not in message
    assert b.seen == []


def test_a_plain_cross_origin_redirect_drops_credential_headers_and_the_body(harness_factory, servers):
    a, b = servers
    a.routes["/hop"] = (303, {"Location": origin(b) + "/landing"})
    h = build(harness_factory, None, None)
    result = h.call(
        "http_request",
        {"method": "POST", "url": origin(a) + "/hop", "body": "x", "headers": {"Authorization": "Bearer typed", "X-Plain": "1"}},
    )
    assert not result.is_error, result.content
    [landed] = b.seen
    assert landed["method"] == "GET" and landed["body"] == "" and landed["headers"]["X-Plain"] == "1"
    assert not {k.lower() for k in landed["headers"]} & {"authorization", "content-type", "content-length"}


def test_a_same_origin_307_keeps_the_secret_and_the_body(harness_factory, servers):
    a, _ = servers
    a.routes["/hop"] = (307, {"Location": "/landing"})
    h = build(harness_factory, api_tool(origin(a) + "/hop", headers=SECRET_HEADERS), [f"127.0.0.1:{a.server_port}"])
    assert not h.call("api", {}).is_error
    first, second = a.seen
    assert second["path"] == "/landing" and second["method"] == "POST" and second["body"] == f"k={SECRET}"
    assert second["headers"]["X-Vault-Token"] == SECRET


def test_a_plain_request_with_a_body_is_not_re_sent_to_another_origin(harness_factory, servers):
    a, b = servers
    a.routes["/hop"] = (307, {"Location": origin(b) + "/landing"})
    h = build(harness_factory, None, None)
    message = h.error("http_request", {"method": "POST", "url": origin(a) + "/hop", "body": "payload"})
    assert message == "refused a 307 redirect to another origin: it would re-send a request body"
    assert b.seen == []
    # without a body, a plain 307 is followed (credential headers dropped, as before)
    result = h.call("http_request", {"method": "GET", "url": origin(a) + "/hop", "headers": {"Authorization": "Bearer typed", "X-A": "1"}})
    assert not result.is_error
    [landed] = b.seen
    assert "Authorization" not in landed["headers"] and landed["headers"]["X-A"] == "1"

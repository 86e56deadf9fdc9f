"""http_request end to end against loopback servers (allowlisted 127.0.0.0/8 on purpose)."""

from __future__ import annotations

import base64
import json

import pytest

from engine.tests.tools.support import manifest

LOOP = ["127.0.0.0/8"]


def net_manifest(allowlist=LOOP, tools=None, network=True, kinds=("network", "file")):
    return manifest(list(kinds), network=network, allowlist=allowlist, tools=tools)


def url(server, path="/echo"):
    return f"http://127.0.0.1:{server.server_port}{path}"


def test_request_reaches_allowlisted_loopback_and_redacts_sensitive_headers(harness_factory, http_server):
    h = harness_factory(net_manifest())
    env = h.content("http_request", {"method": "post", "url": url(http_server), "headers": {"X-T": "1"}, "body": "hello"})
    content = env["content"]
    assert content["status_code"] == 200 and content["url"] == url(http_server)
    assert content["headers"]["set-cookie"] == "[redacted]"
    echoed = json.loads(content["body"])
    assert echoed["method"] == "POST" and echoed["body"] == "hello" and echoed["headers"]["X-T"] == "1"
    assert echoed["headers"]["Host"] == f"127.0.0.1:{http_server.server_port}"
    assert content["body_bytes"] == len(content["body"].encode())


def test_loopback_blocked_without_allowlist(harness_factory, http_server):
    h = harness_factory(net_manifest(allowlist=None))
    assert h.error("http_request", {"method": "GET", "url": url(http_server)}) == "target host is blocked by network policy"


def test_localhost_name_is_blocked_without_allowlist(harness_factory, http_server):
    h = harness_factory(net_manifest(allowlist=None))
    message = h.error("http_request", {"method": "GET", "url": f"http://localhost:{http_server.server_port}/"})
    assert message == "target host resolves to a blocked address"


def test_dns_name_resolving_to_loopback_is_blocked(harness_factory, http_server):
    h = harness_factory(net_manifest(allowlist=None), resolver=lambda host, port: ["127.0.0.1"])
    assert (
        h.error("http_request", {"method": "GET", "url": f"http://public.example:{http_server.server_port}/"})
        == "target host resolves to a blocked address"
    )


def test_pinned_connection_uses_checked_address_and_keeps_host_header(harness_factory, http_server):
    calls = []

    def resolver(host, port):
        calls.append(host)
        return ["127.0.0.1"]

    h = harness_factory(net_manifest(), resolver=resolver)
    env = h.content("http_request", {"method": "GET", "url": f"http://svc.internal.test:{http_server.server_port}/echo"})
    echoed = json.loads(env["content"]["body"])
    assert echoed["headers"]["Host"] == f"svc.internal.test:{http_server.server_port}"
    assert calls == ["svc.internal.test"]  # resolved exactly once


def test_redirect_to_blocked_target_is_refused(harness_factory, http_server):
    http_server.routes["/hop"] = (302, {"Location": "http://169.254.169.254/latest/meta-data/"}, b"")
    h = harness_factory(net_manifest())
    assert h.error("http_request", {"method": "GET", "url": url(http_server, "/hop")}) == "target host is blocked by network policy"


def test_redirect_to_name_resolving_outside_allowlist_is_refused(harness_factory, http_server):
    http_server.routes["/hop"] = (307, {"Location": "http://metadata.test/"}, b"")
    h = harness_factory(net_manifest(), resolver=lambda host, port: ["10.0.0.5"])
    assert h.error("http_request", {"method": "GET", "url": url(http_server, "/hop")}) == "target host resolves to a blocked address"


def test_redirects_are_followed_and_capped(harness_factory, http_server):
    http_server.routes["/a"] = (302, {"Location": "/b"}, b"")
    http_server.routes["/b"] = (301, {"Location": "/echo"}, b"")
    for i in range(7):
        http_server.routes[f"/loop{i}"] = (302, {"Location": f"/loop{i + 1}"}, b"")
    h = harness_factory(net_manifest())
    env = h.content("http_request", {"method": "POST", "url": url(http_server, "/a"), "body": "x"})
    assert env["content"]["url"] == url(http_server, "/echo")
    assert json.loads(env["content"]["body"])["method"] == "GET"
    assert h.error("http_request", {"method": "GET", "url": url(http_server, "/loop0")}) == "too many redirects"


def test_cross_origin_redirect_drops_credentials(harness_factory, http_server):
    http_server.routes["/hop"] = (307, {"Location": f"http://localhost:{http_server.server_port}/echo"}, b"")
    h = harness_factory(net_manifest())
    env = h.content(
        "http_request", {"method": "GET", "url": url(http_server, "/hop"), "headers": {"Authorization": "Bearer abc", "X-Keep": "1"}}
    )
    headers = json.loads(env["content"]["body"])["headers"]
    assert "Authorization" not in headers and headers["X-Keep"] == "1"


def test_status_errors_are_normal_results(harness_factory, http_server):
    http_server.routes["/missing"] = (404, {}, b"nope")
    h = harness_factory(net_manifest())
    result = h.call("http_request", {"method": "GET", "url": url(http_server, "/missing")})
    assert not result.is_error and json.loads(result.content)["content"]["status_code"] == 404


def test_request_body_limit(harness_factory, http_server):
    h = harness_factory(net_manifest())
    assert (
        h.error("http_request", {"method": "POST", "url": url(http_server), "body": "x" * (1024 * 1024 + 1)})
        == "request body exceeds size limit"
    )


def test_response_body_limit(harness_factory, http_server):
    http_server.routes["/huge"] = (200, {}, b"x" * (5 * 1024 * 1024 + 10))
    h = harness_factory(net_manifest())
    assert h.error("http_request", {"method": "GET", "url": url(http_server, "/huge")}) == "response body exceeds size limit"


def test_output_path_saves_body(harness_factory, http_server):
    http_server.routes["/file"] = (200, {}, b"payload")
    h = harness_factory(net_manifest())
    env = h.content("http_request", {"method": "GET", "url": url(http_server, "/file"), "output_path": "dl/out.bin"})
    assert env["content"]["output_path"] == "dl/out.bin" and env["content"]["bytes_downloaded"] == 7
    assert h.content("read_file", {"path": "dl/out.bin"})["content"] == "payload"


def test_connection_refused_is_generic(harness_factory):
    h = harness_factory(net_manifest())
    assert h.error("http_request", {"method": "GET", "url": "http://127.0.0.1:1/"}) == "http connection error"


@pytest.mark.parametrize("m", [net_manifest(network=False), net_manifest(kinds=("file",))])
def test_network_disabled_is_a_policy_denial(harness_factory, http_server, m):
    from engine.tools.primitives.http_request import create

    h = harness_factory(m)
    result = create(h.toolset.ctx)({"method": "GET", "url": url(http_server)})
    assert result.failure_origin == "policy" and json.loads(result.content) == {"error": "tool is not allowed in this runtime"}


def test_http_request_visible_but_refused_when_network_off(harness_factory, http_server):
    h = harness_factory(net_manifest(network=False))
    assert "http_request" in h.toolset.names
    assert h.error("http_request", {"method": "GET", "url": url(http_server)}) == "tool is not allowed in this runtime"


def test_argument_errors(harness_factory):
    h = harness_factory(net_manifest())
    assert h.error("http_request", {"method": " ", "url": "http://x"}) == "method is required"
    assert h.error("http_request", {"method": "GET"}) == "url is required"
    assert (
        h.error("http_request", {"method": "GET", "url": "http://127.0.0.1/", "headers": {"A": 1}})
        == 'tool "http_request" arguments must be valid JSON'
    )


SECRET = "tok-9f8e7d6c5b4a"


def secret_tools(server):
    return {
        "custom": [
            {
                "name": "api",
                "description": "calls the API",
                "parameters": {"type": "object", "properties": {"q": {"type": "string"}}, "additionalProperties": False},
                "implementation": {
                    "primitive": "http_request",
                    "args": {
                        "method": "POST",
                        "url": url(server) + "?q=${query:q}&key=${query:secrets.TOKEN}",
                        "headers": {"Authorization": "Bearer ${secrets.TOKEN}", "X-Basic": "Basic ${secrets.BASIC}"},
                        "body": "${secrets.TOKEN}",
                    },
                },
            },
            {
                "name": "leak_dl",
                "description": "d",
                "implementation": {
                    "primitive": "http_request",
                    "args": {"method": "GET", "url": url(server, "/refused") + "?k=${secrets.TOKEN}"},
                },
            },
        ]
    }


def test_echoing_server_response_is_redacted(harness_factory, http_server):
    basic = base64.b64encode(f"user:{SECRET}".encode()).decode()
    hosts = [f"127.0.0.1:{http_server.server_port}"]
    h = harness_factory(
        net_manifest(tools=secret_tools(http_server)),
        secrets={"TOKEN": SECRET, "BASIC": basic},
        secret_hosts={"TOKEN": hosts, "BASIC": hosts},
    )
    result = h.call("api", {"q": "a b"})
    assert not result.is_error
    assert SECRET not in result.content and basic not in result.content
    echoed = json.loads(json.loads(result.content)["content"]["body"])
    assert echoed["headers"]["Authorization"] == "Bearer [redacted]" and echoed["body"] == "[redacted]"
    assert "q=a+b" in echoed["path"]


def test_secret_never_appears_in_errors_or_spill(harness_factory, http_server):
    h = harness_factory(net_manifest(allowlist=["10.0.0.0/8"], tools=secret_tools(http_server)), secrets={"TOKEN": SECRET, "BASIC": "x"})
    result = h.call("leak_dl", {})
    assert result.is_error and SECRET not in result.content
    for entry in h.sandbox.list_files():
        assert SECRET.encode() not in h.sandbox.read_file(entry.path)


def test_secret_value_reflected_by_agent_is_redacted_everywhere(harness_factory):
    m = manifest([], shell=True)
    h = harness_factory(m, secrets={"TOKEN": SECRET})
    h.call("write_file", {"path": "x.txt", "content": f"the key is {SECRET}"})
    assert SECRET not in h.call("read_file", {"path": "x.txt"}).content
    assert SECRET not in h.call("submit", {"answer": SECRET}).submitted_answer
    assert SECRET not in h.call("search_text", {"pattern": "key"}).content

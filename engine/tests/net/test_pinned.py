"""The pinned-address transport provider SDK clients connect through (engine/net/pinned.py).

The address rules are pure functions; the pinning is shown with real loopback servers on two
loopback addresses and a fake DNS that changes its answer between calls.
"""

from __future__ import annotations

import ipaddress
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx2
import pytest

from engine.net.guard import NetworkPolicyError
from engine.net.pinned import PinnedTransport, pinned_http_client, provider_address_refusal, resolve_pinned
from engine.providers import create_provider
from engine.types import Message, ModelRequest, ProviderError

ip = ipaddress.ip_address


@pytest.mark.parametrize(
    ("address", "strict", "relaxed"),
    [
        ("93.184.216.34", None, None),
        ("2606:4700::1111", None, None),
        ("127.0.0.1", "loopback", None),
        ("10.1.2.3", "private", None),
        ("192.168.1.5", "private", None),
        ("100.64.0.9", "cgnat", None),
        ("::ffff:10.0.0.1", "ipv4_mapped", None),
        ("169.254.169.254", "metadata", "metadata"),
        ("::ffff:169.254.169.254", "metadata", "metadata"),
        ("0.0.0.0", "unspecified", "unspecified"),
        ("224.0.0.1", "multicast", "multicast"),
    ],
)
def test_provider_address_rules_with_and_without_private_urls(address, strict, relaxed):
    assert provider_address_refusal(ip(address), allow_private=False) == strict
    assert provider_address_refusal(ip(address), allow_private=True) == relaxed


def test_it_refuses_a_host_if_any_dns_answer_is_refused():
    with pytest.raises(NetworkPolicyError) as caught:
        resolve_pinned("api.example.com", 443, allow_private=False, resolver=lambda h, p: ["93.184.216.34", "10.0.0.1"])
    assert caught.value.reason == "private" and "private provider URLs are not enabled" in str(caught.value)


def test_it_refuses_metadata_names_before_any_lookup():
    def resolver(host, port):
        raise AssertionError("no lookup expected")

    with pytest.raises(NetworkPolicyError) as caught:
        resolve_pinned("metadata.google.internal", 80, allow_private=True, resolver=resolver)
    assert caught.value.reason == "metadata"


def test_a_resolver_failure_is_dns_failed():
    def resolver(host, port):
        raise OSError("no such host")

    with pytest.raises(NetworkPolicyError) as caught:
        resolve_pinned("nowhere.example.com", 443, allow_private=False, resolver=resolver)
    assert caught.value.reason == "dns_failed"


def test_https_requests_keep_the_hostname_for_sni_and_host_while_connecting_to_the_ip():
    seen: list[tuple[httpx2.URL, dict[str, str], dict[str, object]]] = []

    def answer(request: httpx2.Request) -> httpx2.Response:
        seen.append((request.url, dict(request.headers), dict(request.extensions)))
        return httpx2.Response(200, json={"ok": True})

    transport = PinnedTransport(resolver=lambda h, p: ["93.184.216.34"], inner=httpx2.MockTransport(answer))
    with httpx2.Client(transport=transport) as client:
        assert client.get("https://api.vendor.example/v1/models").status_code == 200
    url, headers, extensions = seen[0]
    assert url.host == "93.184.216.34" and url.path == "/v1/models" and url.scheme == "https"
    assert headers["host"] == "api.vendor.example"
    assert extensions["sni_hostname"] == "api.vendor.example"


# ----------------------------------------------------------------------------- real loopback servers
class _Named(BaseHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        self._answer()

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self._answer()

    def _answer(self) -> None:
        server = self.server
        server.hits.append({"path": self.path, "host": self.headers.get("Host")})  # type: ignore[attr-defined]
        chunk = {
            "id": "c1",
            "object": "chat.completion.chunk",
            "created": 1,
            "model": server.name,  # type: ignore[attr-defined]
            "choices": [{"index": 0, "delta": {"content": f"hello from {server.name}"}, "finish_reason": "stop"}],  # type: ignore[attr-defined]
        }
        body = f"data: {json.dumps(chunk)}\n\ndata: [DONE]\n\n".encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def _serve(address: str, port: int, name: str) -> ThreadingHTTPServer:
    server = ThreadingHTTPServer((address, port), _Named)
    server.name = name  # type: ignore[attr-defined]
    server.hits = []  # type: ignore[attr-defined]
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True).start()
    return server


@pytest.fixture
def two_servers() -> Iterator[tuple[ThreadingHTTPServer, ThreadingHTTPServer]]:
    """Server A on 127.0.0.1 and server B on 127.0.0.2, same port (the port is in the URL, not DNS)."""
    a = _serve("127.0.0.1", 0, "A")
    try:
        b = _serve("127.0.0.2", a.server_address[1], "B")
    except OSError:
        a.shutdown()
        a.server_close()
        pytest.skip("127.0.0.2 is not available on this machine")
    yield a, b
    for server in (a, b):
        server.shutdown()
        server.server_close()


class FakeDns:
    def __init__(self, answer: list[str]) -> None:
        self.answer = answer
        self.lookups = 0

    def __call__(self, host: str, port: int) -> list[str]:
        self.lookups += 1
        return list(self.answer)


def _ask(provider) -> str:
    return provider.complete(ModelRequest(model="m", messages=[Message("user", "hi")], tools=[], step_timeout_seconds=5)).output_text


def test_a_dns_change_after_the_check_does_not_move_the_connection(two_servers):
    a, b = two_servers
    dns = FakeDns(["127.0.0.1"])
    url = f"http://llm.fake-dns.example:{a.server_address[1]}/v1"
    provider = create_provider("custom", api_key=None, base_url=url, deployment_config={}, allow_private_urls=True, resolver=dns)
    assert _ask(provider) == "hello from A"
    dns.answer = ["127.0.0.2"]  # the name is re-pointed (rebinding)
    assert _ask(provider) == "hello from A"
    assert _ask(provider) == "hello from A"
    assert dns.lookups == 1 and len(a.hits) == 3 and b.hits == []
    assert a.hits[0]["host"] == f"llm.fake-dns.example:{a.server_address[1]}"
    # A new client checks afresh and follows the new answer.
    fresh = create_provider("custom", api_key=None, base_url=url, deployment_config={}, allow_private_urls=True, resolver=dns)
    assert _ask(fresh) == "hello from B"


def test_a_name_re_pointed_to_a_private_address_after_the_check_is_never_reached(two_servers):
    a, b = two_servers
    dns = FakeDns(["93.184.216.34"])
    transport = PinnedTransport(allow_private=False, resolver=dns)
    transport.pin_url(f"http://api.vendor.example:{a.server_address[1]}/")
    dns.answer = ["127.0.0.1"]
    # Pinned to the checked public answer; the later loopback answer is never even looked up.
    assert [str(x) for x in transport.pinned("api.vendor.example", a.server_address[1])] == ["93.184.216.34"]
    assert dns.lookups == 1
    # A client that sees the loopback answer at its (only) check refuses it without connecting.
    strict = create_provider(
        "custom",
        api_key=None,
        base_url=f"http://api.vendor.example:{a.server_address[1]}/v1",
        deployment_config={},
        resolver=lambda h, p: ["127.0.0.1"],
    )
    with pytest.raises(ProviderError) as caught:
        _ask(strict)
    assert caught.value.code == "invalid_request" and not caught.value.retryable
    assert "refused" in caught.value.message and "loopback" in caught.value.message
    assert a.hits == [] and b.hits == []


def test_dns_failure_at_call_time_is_retryable_unavailable():
    def resolver(host, port):
        raise OSError("temporary failure in name resolution")

    provider = create_provider("openai", api_key="k", base_url="https://api.vendor.example/v1", deployment_config={}, resolver=resolver)
    with pytest.raises(ProviderError) as caught:
        _ask(provider)
    assert (caught.value.code, caught.value.retryable) == ("unavailable", True)


def test_it_tries_the_next_checked_address_when_one_refuses_the_connection(two_servers):
    a, _ = two_servers
    # Nothing listens on 127.0.0.3 at that port: the connection is refused and the next pin is used.
    client = pinned_http_client(allow_private=True, resolver=lambda h, p: ["127.0.0.3", "127.0.0.1"], timeout=5)
    with client:
        response = client.get(f"http://two-answers.example:{a.server_address[1]}/ping")
    assert response.status_code == 200 and a.hits[-1]["path"] == "/ping"


def test_the_client_does_not_follow_redirects_or_read_proxy_settings(monkeypatch):
    monkeypatch.setenv("HTTPS_PROXY", "http://127.0.0.1:9")
    client = pinned_http_client(resolver=lambda h, p: ["93.184.216.34"])
    assert client.follow_redirects is False and client.trust_env is False
    client.close()

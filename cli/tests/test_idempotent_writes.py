"""The CLI sends one ``Idempotency-Key`` per invocation on the writes that must not happen twice:
when the answer to ``POST …/runs`` is lost and the CLI retries, the server replays the first run."""

from __future__ import annotations

import json

import httpx
import pytest
from agentclash_cli.client import Client, Config

from runs.models import Run

from .fake_http import Reply, fake_server, scripted
from .live import GOOD

pytestmark = pytest.mark.django_db(transaction=True)

PACK = "demo-prompt-eval@1"


class LosesTheFirstRunAnswer(httpx.HTTPTransport):
    """Forwards every request; the server's answer to the first ``POST …/runs`` is swapped for a
    503 (a proxy timing out after the run was created), so the CLI retries it."""

    def __init__(self) -> None:
        super().__init__()
        self.run_posts: list[str] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        response = super().handle_request(request)
        if request.method == "POST" and request.url.path.endswith("/runs"):
            self.run_posts.append(request.headers.get("Idempotency-Key", ""))
            if len(self.run_posts) == 1:
                response.read()
                response.close()
                return httpx.Response(503, headers={"Retry-After": "0"})
        return response


def test_a_run_whose_answer_was_lost_is_started_once(cli, demo, captured_tasks, monkeypatch):
    transport = LosesTheFirstRunAnswer()
    real_client = httpx.Client
    monkeypatch.setattr(httpx, "Client", lambda **kwargs: real_client(**{**kwargs, "transport": transport}))
    result = cli("run", "--pack", PACK, "--deployment", GOOD, "--json")
    assert result.code == 0, result
    assert len(transport.run_posts) == 2 and transport.run_posts[0] and transport.run_posts[0] == transport.run_posts[1]
    assert "HTTP 503" in result.err  # the retry is said on stderr
    assert Run.objects.count() == 1 and json.loads(result.out)["id"] == Run.objects.get().pk


def test_each_invocation_and_each_write_gets_its_own_key(offline_cli, monkeypatch):
    created: Reply = (201, {}, {"id": 1})
    keys: list[str] = []

    def route(method, path, body, headers):
        if method == "POST":
            keys.append(headers.get("idempotency-key", ""))
        return scripted([], then=created)(method, path, body, headers)

    with fake_server(route) as (url, _):
        for _ in range(2):
            with Client(Config(url=url, token="act_x", workspace="acme")) as client:
                client.post(client.ws("runs"), {}, idempotent=True)
                client.post(client.ws("runs"), {}, idempotent=True)
                client.post(client.ws("comparisons"), {})
        monkeypatch.setenv("AGENTCLASH_IDEMPOTENCY_KEY", "gh-991")
        with Client(Config(url=url, token="act_x", workspace="acme")) as client:
            client.post(client.ws("runs"), {}, idempotent=True)
    assert len(keys) == 7 and keys[2] == keys[5] == ""
    assert len({keys[0], keys[1], keys[3], keys[4]}) == 4
    assert keys[6] == "gh-991-1"

"""429 and 503 are retried after ``Retry-After`` (seconds or an HTTP date), with a doubling backoff
without it, bounded in attempts and in total wait — against a loopback server that answers them."""

from __future__ import annotations

import datetime as dt
import email.utils

import pytest
from agentclash_cli.client import ApiError, Client, Config
from agentclash_cli.retry import RetryPolicy, retry_after

from .fake_http import Reply, fake_server, scripted

OK: Reply = (200, {}, {"results": [], "next": None})
NOW = dt.datetime(2025, 3, 1, 12, 0, 0, tzinfo=dt.UTC)


def http_date(when: dt.datetime) -> str:
    return email.utils.format_datetime(when, usegmt=True)


def client(url: str, sleeps: list[float], notes: list[str], policy: RetryPolicy | None = None) -> Client:
    return Client(Config(url=url, token="act_x", workspace="acme"), sleep=sleeps.append, note=notes.append, retry_policy=policy)


@pytest.mark.parametrize(
    ("header", "seconds"),
    [
        ("7", 7.0),
        ("0", 0.0),
        (http_date(NOW + dt.timedelta(seconds=90)), 90.0),
        (http_date(NOW - dt.timedelta(seconds=30)), 0.0),  # a date gone by: at once
        ("soon", None),
        ("-3", None),
        ("", None),
        (None, None),
    ],
)
def test_retry_after_reads_seconds_and_http_dates(header, seconds):
    assert retry_after(header, now=NOW) == seconds


def test_a_429_then_a_503_are_waited_out_as_retry_after_says():
    at = dt.datetime.now(dt.UTC) + dt.timedelta(seconds=30)
    replies = [
        (429, {"Retry-After": "2"}, {"error": {"code": "throttled", "message": "slow down"}}),
        (503, {"Retry-After": http_date(at)}, None),
    ]
    sleeps: list[float] = []
    notes: list[str] = []
    with fake_server(scripted(replies, then=OK)) as (url, seen):
        assert client(url, sleeps, notes).get("/api/v1/workspaces/acme/secrets") == OK[2]
    assert len(seen) == 3
    assert sleeps[0] == 2.0
    assert 25.0 <= sleeps[1] <= 30.0, "the HTTP date is counted from now"
    assert notes[0] == "HTTP 429 from GET /api/v1/workspaces/acme/secrets; retrying in 2s (attempt 2 of 5)"


def test_without_retry_after_the_wait_doubles():
    sleeps: list[float] = []
    with fake_server(scripted([(503, {}, None)] * 3, then=OK)) as (url, seen):
        client(url, sleeps, []).get("/x")
    assert sleeps == [1.0, 2.0, 4.0]
    assert len(seen) == 4


def test_the_attempts_are_bounded():
    sleeps: list[float] = []
    with fake_server(scripted([], then=(429, {"Retry-After": "1"}, {"error": {"code": "throttled", "message": "slow down"}}))) as (
        url,
        seen,
    ):
        with pytest.raises(ApiError) as raised:
            client(url, sleeps, []).get("/x")
    assert len(seen) == 5
    assert sleeps == [1.0] * 4
    assert raised.value.status == 429
    assert raised.value.message == "slow down (HTTP 429, throttled); gave up after 5 attempts"


def test_a_retry_after_beyond_the_total_wait_is_not_waited_for():
    sleeps: list[float] = []
    replies = [(503, {"Retry-After": "60"}, None), (503, {"Retry-After": "61"}, None)]
    with fake_server(scripted(replies, then=OK)) as (url, seen):
        with pytest.raises(ApiError) as raised:
            client(url, sleeps, [], RetryPolicy(attempts=5, max_wait=100)).get("/x")
    assert sleeps == [60.0], "60 s fits in 100 s, another 61 s does not"
    assert len(seen) == 2
    assert "not retried: waiting 61s more would exceed the 100s the CLI waits in all" in raised.value.message


def test_a_post_is_sent_again_with_its_body():
    with fake_server(scripted([(429, {"Retry-After": "0"}, None)], then=(201, {}, {"id": 1}))) as (url, seen):
        assert client(url, [], []).post("/api/v1/workspaces/acme/runs", {"name": "n"}) == {"id": 1}
    assert [(method, body) for method, _, body, _ in seen] == [("POST", {"name": "n"}), ("POST", {"name": "n"})]


def test_other_errors_are_not_retried():
    with fake_server(scripted([], then=(500, {"Retry-After": "0"}, {"error": {"code": "server_error", "message": "boom"}}))) as (url, seen):
        with pytest.raises(ApiError):
            client(url, [], []).get("/x")
    assert len(seen) == 1


def test_the_command_line_waits_and_says_so_on_stderr(offline_cli):
    replies = [(429, {"Retry-After": "0"}, {"error": {"code": "throttled", "message": "slow down"}})]
    rows = {"results": [{"key": "OPENAI_API_KEY", "allowed_hosts": [], "updated_at": "2025-01-01", "updated_by": "amy"}], "next": None}
    with fake_server(scripted(replies, then=(200, {}, rows))) as (url, seen):
        result = offline_cli("secret", "list", "--url", url)
    assert result.code == 0, result
    assert "OPENAI_API_KEY" in result.out
    assert "agentclash: HTTP 429 from GET /api/v1/workspaces/acme/secrets; retrying in 0s (attempt 2 of 5)" in result.err
    assert [path for _, path, _, _ in seen] == ["/api/v1/workspaces/acme/secrets?limit=200&offset=0"] * 2

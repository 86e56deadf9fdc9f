"""API throttles: per-user and anonymous rates, and a small budget for failed bearer tokens."""

from __future__ import annotations

import secrets
import threading
import types

import pytest
from django.conf import settings
from django.core.management import call_command
from django.test import override_settings
from rest_framework.test import APIClient

from core import throttling
from core.throttling import window_hit

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _one_window(monkeypatch):
    """The windows are fixed (they start on multiples of their length): a test whose requests
    straddled a minute boundary got a second budget and failed (300 requests on a loaded CI
    machine take most of a minute). The throttle's clock stands 30 s into a minute here."""
    monkeypatch.setattr(throttling, "time", types.SimpleNamespace(time=lambda: 1_800_000_030.0))


def _rates(**rates: str) -> dict:
    return {**settings.REST_FRAMEWORK, "DEFAULT_THROTTLE_RATES": {**settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"], **rates}}


def _token_for(user, name: str = "t") -> str:
    import io

    out = io.StringIO()
    call_command("createapitoken", user.username, "--name", name, stdout=out)
    return out.getvalue().strip()


def _bearer(raw: str, ip: str = "203.0.113.5") -> APIClient:
    client = APIClient(REMOTE_ADDR=ip)
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    return client


def test_three_hundred_random_bearer_tokens_are_throttled(admin):
    statuses = [_bearer("act_" + secrets.token_urlsafe(32)).get("/api/v1/me").status_code for _ in range(300)]
    budget = int(settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"]["token_auth_failure"].split("/")[0])
    assert statuses[:budget] == [401] * budget
    assert set(statuses[budget:]) == {429}
    response = _bearer("act_" + secrets.token_urlsafe(32)).get("/api/v1/me")
    assert response.status_code == 429
    assert response.json()["error"]["code"] == "throttled"
    assert int(response["Retry-After"]) > 0


def test_a_valid_token_still_works_after_twenty_bad_ones_from_its_address(admin):
    """A shared NAT or CI fleet: one client's bad tokens never lock out the valid ones beside it."""
    valid = _token_for(admin)
    bad = [_bearer("act_wrong").get("/api/v1/me").status_code for _ in range(30)]
    assert bad[:20] == [401] * 20 and set(bad[20:]) == {429}
    assert _bearer(valid).get("/api/v1/me").status_code == 200
    assert _bearer("act_wrong").get("/api/v1/me").status_code == 429  # the guessing stays slowed down


def test_valid_tokens_do_not_use_up_the_failure_budget(admin):
    valid = _token_for(admin)
    for _ in range(50):
        assert _bearer(valid).get("/api/v1/me").status_code == 200


def test_authenticated_users_are_throttled_per_user(admin, member):
    client = _bearer(_token_for(admin))
    with override_settings(REST_FRAMEWORK=_rates(user="5/min")):
        statuses = [client.get("/api/v1/me").status_code for _ in range(8)]
        other = _bearer(_token_for(member)).get("/api/v1/me")
    assert statuses == [200] * 5 + [429] * 3
    assert other.status_code == 200


def test_anonymous_requests_are_throttled_per_address(db):
    # Anonymous callers only get past authentication on the public docs and schema.
    with override_settings(REST_FRAMEWORK=_rates(anon="3/min")):
        statuses = [APIClient(REMOTE_ADDR="203.0.113.9").get("/api/docs/").status_code for _ in range(5)]
        elsewhere = APIClient(REMOTE_ADDR="198.51.100.9").get("/api/docs/")
    assert statuses == [200, 200, 200, 429, 429]
    assert elsewhere.status_code == 200


def test_the_throttle_counts_the_address_behind_trusted_proxies(admin):
    with override_settings(TRUSTED_PROXY_COUNT=1, REST_FRAMEWORK={**settings.REST_FRAMEWORK, "NUM_PROXIES": 1}):
        for n in range(30):
            client = APIClient(REMOTE_ADDR="10.0.0.1", HTTP_X_FORWARDED_FOR="203.0.113.77")
            client.credentials(HTTP_AUTHORIZATION=f"Bearer act_wrong{n}")
            client.get("/api/v1/me")
        elsewhere = APIClient(REMOTE_ADDR="10.0.0.1", HTTP_X_FORWARDED_FOR="198.51.100.3")
        elsewhere.credentials(HTTP_AUTHORIZATION="Bearer act_wrong")
        assert elsewhere.get("/api/v1/me").status_code == 401  # a different client behind the same proxy


def test_every_api_response_carries_the_ratelimit_headers(admin):
    client = _bearer(_token_for(admin))
    with override_settings(REST_FRAMEWORK=_rates(user="5/min")):
        answers = [client.get("/api/v1/me") for _ in range(6)]
    assert [a["RateLimit-Remaining"] for a in answers] == ["4", "3", "2", "1", "0", "0"]
    assert {a["RateLimit-Limit"] for a in answers} == {"5"}
    assert all(1 <= int(a["RateLimit-Reset"]) <= 60 for a in answers)
    assert answers[-1].status_code == 429 and int(answers[-1]["Retry-After"]) == int(answers[-1]["RateLimit-Reset"])
    # Answers no throttle saw still say what the address has left: a 404 route, a 401, a refused token.
    for response in (
        client.get("/api/v1/no-such-thing"),
        APIClient(REMOTE_ADDR="203.0.113.50").get("/api/v1/me"),
        _bearer("act_wrong").get("/api/v1/me"),
    ):
        assert response.status_code in (401, 404) and response["RateLimit-Limit"] and "RateLimit-Remaining" in response
    assert "RateLimit-Limit" not in client.get("/healthz")  # pages are not the API


def test_window_counting_is_exact_under_threads(settings):
    """Eight threads, 25 hits each, against a 120 budget: exactly 120 allowed (no read-modify-write)."""
    results: list[bool] = []
    lock = threading.Lock()
    barrier = threading.Barrier(8)

    def hammer() -> None:
        barrier.wait()
        mine = [window_hit("test", "one-client", "120/h").allowed for _ in range(25)]
        with lock:
            results.extend(mine)

    threads = [threading.Thread(target=hammer) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results.count(True) == 120 and results.count(False) == 80

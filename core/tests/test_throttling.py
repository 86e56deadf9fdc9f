"""API throttles: per-user and anonymous rates, and a small budget for failed bearer tokens."""

from __future__ import annotations

import secrets

import pytest
from django.conf import settings
from django.core.management import call_command
from django.test import override_settings
from rest_framework.test import APIClient

pytestmark = pytest.mark.django_db


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


def test_once_throttled_even_a_valid_token_from_that_address_waits(admin):
    valid = _token_for(admin)
    for _ in range(30):
        _bearer("act_wrong").get("/api/v1/me")
    assert _bearer(valid).get("/api/v1/me").status_code == 429
    assert _bearer(valid, ip="198.51.100.20").get("/api/v1/me").status_code == 200


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

"""Both login pages lock a username from one address after repeated failures (django-axes)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from axes.models import AccessAttempt
from django.conf import settings
from django.test import Client
from django.utils import timezone

from workspaces.tests.factories import PASSWORD, make_user

pytestmark = pytest.mark.django_db

LOGIN_PAGES = ["/accounts/login/", "/admin/login/"]


def _attempt(client: Client, path: str, username: str, password: str, ip: str = "203.0.113.7"):
    return client.post(path, {"username": username, "password": password}, REMOTE_ADDR=ip)


@pytest.fixture
def staff(db):
    return make_user("operator", is_staff=True, is_superuser=True)


@pytest.mark.parametrize("path", LOGIN_PAGES)
def test_repeated_wrong_passwords_lock_the_username_from_that_address(client, staff, path):
    statuses = [_attempt(client, path, "operator", f"wrong-{n}").status_code for n in range(30)]
    limit = settings.AXES_FAILURE_LIMIT
    assert statuses[: limit - 1] == [200] * (limit - 1)  # the form again, with an error
    assert set(statuses[limit - 1 :]) == {429}
    locked = _attempt(client, path, "operator", PASSWORD)
    assert locked.status_code == 429
    assert b"Too many failed logins" in locked.content
    assert f"Try again in {int(settings.AXES_COOLOFF_TIME.total_seconds() // 60)} minutes".encode() in locked.content
    assert int(locked["Retry-After"]) == int(settings.AXES_COOLOFF_TIME.total_seconds())
    assert "_auth_user_id" not in client.session
    assert b"manage.py" not in locked.content and b"axes_reset" not in locked.content  # no operator command for end users


def test_fifty_wrong_passwords_never_let_the_right_one_through(client, staff):
    for n in range(50):
        _attempt(client, "/accounts/login/", "operator", f"guess-{n}")
    assert _attempt(client, "/accounts/login/", "operator", PASSWORD).status_code == 429
    assert client.get("/").status_code == 302  # still anonymous: sent to the login page


def test_the_lock_is_per_username_and_address(client, staff):
    for n in range(settings.AXES_FAILURE_LIMIT):
        _attempt(client, "/accounts/login/", "operator", f"wrong-{n}")
    other_address = Client()
    assert _attempt(other_address, "/accounts/login/", "operator", PASSWORD, ip="198.51.100.9").status_code == 302
    bob = make_user("bob")
    assert _attempt(Client(), "/accounts/login/", bob.username, PASSWORD).status_code == 302


def test_the_lock_lifts_after_the_cool_off(client, staff):
    for n in range(settings.AXES_FAILURE_LIMIT):
        _attempt(client, "/admin/login/", "operator", f"wrong-{n}")
    assert _attempt(client, "/admin/login/", "operator", PASSWORD).status_code == 429
    AccessAttempt.objects.update(attempt_time=timezone.now() - settings.AXES_COOLOFF_TIME - timedelta(seconds=1))
    assert _attempt(client, "/admin/login/?next=/admin/", "operator", PASSWORD).status_code == 302
    assert client.get("/admin/").status_code == 200


def test_a_successful_login_resets_the_failure_count(client, staff):
    for n in range(settings.AXES_FAILURE_LIMIT - 1):
        _attempt(client, "/accounts/login/", "operator", f"wrong-{n}")
    assert _attempt(client, "/accounts/login/", "operator", PASSWORD).status_code == 302
    client.post("/accounts/logout/")
    for n in range(settings.AXES_FAILURE_LIMIT - 1):
        assert _attempt(client, "/accounts/login/", "operator", f"again-{n}").status_code == 200
    assert _attempt(client, "/accounts/login/", "operator", PASSWORD).status_code == 302

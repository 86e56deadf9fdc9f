"""Fixtures shared by every app's tests.

Personas (docs/style.md §23): ``admin``, ``member`` and ``viewer`` belong to ``workspace``;
``stranger`` is the admin of ``other_workspace`` and of nothing else.
"""

from __future__ import annotations

import os
import shutil
from typing import Any

import pytest
from django.conf import settings
from rest_framework.test import APIClient

from workspaces.models import Role
from workspaces.tests.factories import add_member, make_user, make_workspace


def require_or_skip(available: bool, what: str) -> None:
    """Skip when a real service is missing, unless REQUIRE_SERVICES=1 (CI), where it fails."""
    if available:
        return
    if settings.REQUIRE_SERVICES:
        pytest.fail(f"{what} is required (REQUIRE_SERVICES=1) but not available")
    pytest.skip(f"{what} not available")


@pytest.fixture(autouse=True)
def _fresh_cache():
    """API throttle counters live in the (process-local) cache: no test inherits another's."""
    from django.core.cache import cache

    cache.clear()
    yield
    cache.clear()


@pytest.fixture
def workspace(db):
    return make_workspace("acme", "Acme")


@pytest.fixture
def other_workspace(db):
    return make_workspace("globex", "Globex")


@pytest.fixture
def admin(workspace):
    user = make_user("alice")
    add_member(workspace, user, Role.ADMIN)
    return user


@pytest.fixture
def member(workspace):
    user = make_user("bob")
    add_member(workspace, user, Role.MEMBER)
    return user


@pytest.fixture
def viewer(workspace):
    user = make_user("victor")
    add_member(workspace, user, Role.VIEWER)
    return user


@pytest.fixture
def stranger(other_workspace):
    user = make_user("charlie")
    add_member(other_workspace, user, Role.ADMIN)
    return user


def _api_client_for(user: Any) -> APIClient:
    client = APIClient()
    if user is not None:
        client.force_authenticate(user)
    return client


@pytest.fixture
def api_client_for():
    """``api_client_for(user)`` → an APIClient authenticated as that user."""
    return _api_client_for


@pytest.fixture
def client_for(client):
    """``client_for(user)`` → the Django test client logged in as that user."""

    def login(user: Any):
        client.force_login(user)
        return client

    return login


@pytest.fixture
def bwrap_available() -> bool:
    return shutil.which("bwrap") is not None


@pytest.fixture
def chromium_path() -> str:
    path = shutil.which("chromium") or "/usr/bin/chromium"
    require_or_skip(os.path.exists(path), "Debian chromium (apt-get install chromium)")
    return path


@pytest.fixture
def page(chromium_path, live_server):
    """A desktop Chromium page on the live server's origin (``core/tests/browser.py``: CSP
    violations recorded, ``page.console_errors``); log in with ``core.tests.browser.login``.
    The 40 s default timeout suits pages a real worker fills; a passing test never waits for it."""
    from core.tests.browser import chromium_page

    with chromium_page(chromium_path, timeout_ms=40_000) as browser_page:
        yield browser_page


def pytest_sessionfinish(session, exitstatus):
    """Remove the WAL side files Django leaves behind when it drops a file-based SQLite test DB."""
    from django.conf import settings

    name = (settings.DATABASES["default"].get("TEST") or {}).get("NAME")
    if name and settings.DATABASES["default"]["ENGINE"].endswith("sqlite3"):
        for suffix in ("-shm", "-wal"):
            try:
                os.remove(f"{name}{suffix}")
            except FileNotFoundError:
                pass


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup, django_db_blocker):
    """After the session, end sessions the live server's request threads left open on PostgreSQL,
    so the test database can be dropped (otherwise: "database is being accessed by other users")."""
    yield
    from django.db import connection

    with django_db_blocker.unblock():
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()"
                )

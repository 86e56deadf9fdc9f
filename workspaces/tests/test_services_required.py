"""With REQUIRE_SERVICES=1 (CI) the suite must really run on PostgreSQL and Redis."""

from __future__ import annotations

import pytest
from django.conf import settings
from django.db import connection

from conftest import require_or_skip

pytestmark = pytest.mark.services


@pytest.mark.django_db
def test_the_database_is_postgresql_when_services_are_required():
    require_or_skip(connection.vendor == "postgresql", "PostgreSQL (DATABASE_URL=postgres://…)")
    with connection.cursor() as cursor:
        cursor.execute("SHOW server_version")
        assert cursor.fetchone()[0]


def test_the_broker_is_redis_when_services_are_required():
    broker = settings.CELERY_BROKER_URL
    require_or_skip(broker.startswith("redis://"), "Redis (CELERY_BROKER_URL=redis://…)")
    import redis

    assert redis.Redis.from_url(broker, socket_timeout=2).ping() is True


def test_bubblewrap_is_installed_when_services_are_required():
    import shutil

    require_or_skip(shutil.which("bwrap") is not None, "bubblewrap (apt-get install bubblewrap)")

"""Throttles hold under real concurrency: eight connections through a live server, and several
processes sharing one Redis cache, never get past the budget."""

from __future__ import annotations

import multiprocessing
import threading
import uuid
from collections import Counter

import pytest
import requests
from django.conf import settings
from django.test import override_settings

from conftest import require_or_skip
from core import throttling
from workspaces.services import api_token_create

LIMIT = 40


def _redis_cache(location: str, prefix: str) -> dict:
    return {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": location, "KEY_PREFIX": prefix}}


@pytest.mark.django_db(transaction=True)
def test_eight_concurrent_connections_get_429_at_the_limit(live_server, admin):
    """On Redis when there is one (CI): DRF's history list let all 80 through there (read, append, write back)."""
    _, raw = api_token_create(user=admin, name="burst")
    rates = {**settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"], "user": f"{LIMIT}/h"}
    location = settings.CELERY_BROKER_URL
    caches = _redis_cache(location, f"h27a-live-{uuid.uuid4().hex}") if location.startswith("redis://") else settings.CACHES
    statuses: list[int] = []
    lock = threading.Lock()
    barrier = threading.Barrier(8)

    def connection() -> None:
        session = requests.Session()
        session.headers["Authorization"] = f"Bearer {raw}"
        barrier.wait(timeout=30)
        mine = [session.get(f"{live_server.url}/api/v1/me", timeout=30).status_code for _ in range(10)]
        with lock:
            statuses.extend(mine)

    with override_settings(REST_FRAMEWORK={**settings.REST_FRAMEWORK, "DEFAULT_THROTTLE_RATES": rates}, CACHES=caches):
        threads = [threading.Thread(target=connection) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=120)
    assert Counter(statuses) == Counter({200: LIMIT, 429: 80 - LIMIT})


def _hits(location: str, prefix: str, n: int) -> list[bool]:
    """One process's requests; the keys expire with their window (an hour), under a prefix no one else uses."""
    with override_settings(CACHES=_redis_cache(location, prefix)):
        return [throttling.window_hit("proc", "client", f"{LIMIT}/h").allowed for _ in range(n)]


@pytest.mark.services
def test_processes_sharing_a_redis_cache_count_one_budget():
    location = settings.CELERY_BROKER_URL
    require_or_skip(location.startswith("redis://"), "Redis (CELERY_BROKER_URL=redis://…)")
    prefix = f"h27a-test-{uuid.uuid4().hex}"
    with multiprocessing.get_context("fork").Pool(4) as pool:
        results = pool.starmap(_hits, [(location, prefix, 25)] * 4)
    allowed = [ok for part in results for ok in part]
    assert allowed.count(True) == LIMIT and allowed.count(False) == 100 - LIMIT

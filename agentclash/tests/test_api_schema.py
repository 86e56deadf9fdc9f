"""The OpenAPI schema is generated from the views and must be valid (docs/style.md §18)."""

from __future__ import annotations

import threading

import pytest
import requests
from django.core.management import call_command


def test_the_openapi_schema_generates_without_warnings_and_validates(tmp_path):
    out = tmp_path / "schema.yaml"
    call_command("spectacular", "--validate", "--fail-on-warn", "--file", str(out))
    text = out.read_text()
    assert "openapi: 3" in text
    assert "/api/v1/me" in text and "/api/v1/primitives" in text


@pytest.mark.django_db(transaction=True)
def test_concurrent_first_schema_requests_all_succeed(live_server):
    """The first requests after a start used to race in drf-spectacular's generator (500s)."""
    barrier = threading.Barrier(6)
    statuses: list[int] = []

    def fetch() -> None:
        barrier.wait(timeout=30)
        statuses.append(requests.get(f"{live_server.url}/api/schema/", timeout=120).status_code)

    threads = [threading.Thread(target=fetch) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=180)
    assert statuses == [200] * 6

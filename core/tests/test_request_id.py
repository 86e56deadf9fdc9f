"""``X-Request-Id`` on every answer, in the log lines of its request and in a 500's envelope."""

from __future__ import annotations

import contextvars
import logging

import pytest

from core.request_id import RequestIdLogFilter
from workspaces import selectors

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("path", ["/api/v1/me", "/api/v1/no-such-thing", "/healthz", "/accounts/login/", "/nowhere"])
def test_every_answer_carries_a_fresh_request_id(client, path):
    first, second = client.get(path), client.get(path)
    assert len(first["X-Request-Id"]) == 32 and first["X-Request-Id"] != second["X-Request-Id"]


def test_a_sane_incoming_id_is_kept_and_anything_else_replaced(client):
    assert client.get("/healthz", HTTP_X_REQUEST_ID="lb-7f3a:42").get("X-Request-Id") == "lb-7f3a:42"
    for bad in ("", "x" * 129, "two words", "<script>", "é"):
        replaced = client.get("/healthz", HTTP_X_REQUEST_ID=bad)["X-Request-Id"]
        assert replaced != bad and len(replaced) == 32


def test_the_log_lines_of_a_request_carry_its_id(api_client_for, admin):
    records: list[logging.LogRecord] = []

    class Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record)

    handler = Collect()
    handler.addFilter(RequestIdLogFilter())
    logger = logging.getLogger("django.request")  # logged after the middleware chain returned
    logger.addHandler(handler)
    try:
        body = '{"name": "x", "tool_kind": "primitive", "capability_key": "s", "definition": ' + "[" * 5000 + "]" * 5000 + "}"
        response = api_client_for(admin).generic("POST", "/api/v1/workspaces/acme/tool-resources", body, content_type="application/json")
    finally:
        logger.removeHandler(handler)
    assert response.status_code == 400
    assert records and {record.request_id for record in records} == {response["X-Request-Id"]}  # type: ignore[attr-defined]
    outside = logging.LogRecord("x", logging.INFO, __file__, 1, "m", None, None)
    contextvars.Context().run(RequestIdLogFilter().filter, outside)
    assert outside.request_id == "-"  # type: ignore[attr-defined]


def test_a_500_envelope_names_the_request_id(api_client_for, admin, monkeypatch):
    def broken(**kwargs):
        raise RuntimeError("bug")

    monkeypatch.setattr(selectors, "memberships_for_user", broken)
    client = api_client_for(admin)
    client.raise_request_exception = False
    response = client.get("/api/v1/workspaces", HTTP_X_REQUEST_ID="trace-500")
    assert response.status_code == 500 and response["X-Request-Id"] == "trace-500"
    error = response.json()["error"]
    assert error["code"] == "server_error" and error["request_id"] == "trace-500" and "trace-500" in error["message"]

"""The OpenAPI schema is generated from the views and must be valid (docs/style.md §18)."""

from __future__ import annotations

import threading

import pytest
import requests
import yaml
from django.core.management import call_command

from core.schema import ERROR_REF, error_codes

_HOSTED_ERRORS = ["400", "401", "404", "409", "410", "413", "429"]


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


@pytest.fixture(scope="module")
def schema(tmp_path_factory) -> dict:
    out = tmp_path_factory.mktemp("schema") / "schema.yaml"
    call_command("spectacular", "--file", str(out))
    return yaml.safe_load(out.read_text())


def _operations(schema: dict):
    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            yield path, method, operation


def _is_error_schema(body: dict) -> bool:
    return body == ERROR_REF or (ERROR_REF in body.get("anyOf", []))


def test_every_operation_documents_its_error_answers_with_the_one_error_component(schema):
    assert schema["components"]["schemas"]["Error"]["required"] == ["error"]
    missing = []
    for path, method, operation in _operations(schema):
        expected = _HOSTED_ERRORS if path.startswith("/hooks/") else error_codes(path, method)
        for code in expected:
            answer = operation["responses"].get(code)
            if answer is None or not _is_error_schema(answer["content"]["application/json"]["schema"]):
                missing.append(f"{method.upper()} {path} {code}")
        for code, answer in operation["responses"].items():
            if code.startswith("4") and not _is_error_schema(answer["content"]["application/json"]["schema"]):
                missing.append(f"{method.upper()} {path} {code} (not the Error component)")
    assert not missing, missing


def test_every_answer_documents_the_request_id_and_ratelimit_headers(schema):
    for path, _method, operation in _operations(schema):
        if path.startswith("/api/"):
            for code, answer in operation["responses"].items():
                assert {"X-Request-Id", "RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset"} <= set(answer["headers"]), (path, code)


def test_growing_lists_are_documented_as_limit_offset_pages(schema):
    """Every list of a workspace's objects is one shape: {count, next, previous, results} with ?limit=&offset=."""
    catalogues = {"/api/v1/primitives", "/api/v1/sandbox-templates", "/api/v1/workspaces/{workspace_slug}/runs/{run_id}/regression"}
    pages = 0
    for path, method, operation in _operations(schema):
        body = operation["responses"].get("200", {}).get("content", {}).get("application/json", {}).get("schema", {})
        if method != "get" or path in catalogues:
            continue
        assert body.get("type") != "array", f"{path} answers a bare array"
        if body.get("$ref", "").startswith("#/components/schemas/Paginated"):
            pages += 1
            names = {parameter["name"] for parameter in operation.get("parameters", [])}
            assert {"limit", "offset"} <= names, path
            page = schema["components"]["schemas"][body["$ref"].rsplit("/", 1)[1]]
            assert {"count", "next", "previous", "results"} <= set(page["properties"]), path
    assert pages >= 19


def test_the_hosted_callback_is_documented(schema):
    operation = schema["paths"]["/hooks/hosted/{case_run_id}/events"]["post"]
    assert operation["security"] == [{"hostedCaseToken": []}]
    message = schema["components"]["schemas"]["HostedMessage"]
    assert "final_answer" in message["properties"]["type"]["enum"] and set(operation["responses"]) == {"201", *_HOSTED_ERRORS}

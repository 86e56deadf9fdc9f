"""Every error under /api/ is the JSON envelope, ugly input included; HTML pages answer 400s.

Through the real API client. Run these once on PostgreSQL too (DATABASE_URL=postgres://…), where
NUL characters and out-of-range numbers are refused by the database itself.
"""

from __future__ import annotations

import io
import json

import pytest
from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import DataError
from django.test import RequestFactory
from django.urls import reverse

from core.api import exception_handler
from core.middleware import ApiErrorMiddleware
from core.parsers import read_bounded
from workspaces.models import WorkspaceMembership

pytestmark = pytest.mark.django_db

TOOLS = "/api/v1/workspaces/acme/tool-resources"
MEMBERS = "/api/v1/workspaces/acme/members"


def _tool(**definition_and_fields) -> dict:
    return {"name": "Search", "tool_kind": "primitive", "capability_key": "search", **definition_and_fields}


def _raw_json(client, url: str, text: str, method: str = "POST"):
    return client.generic(method, url, text.encode(), content_type="application/json")


def _envelope(response, status: int, code: str = "invalid_request") -> dict:
    assert response.status_code == status, response.content[:300]
    assert response["Content-Type"].startswith("application/json")
    body = response.json()
    assert body["error"]["code"] == code
    assert body["error"]["message"]
    return body["error"]


def test_a_valid_json_body_still_works(api_client_for, admin):
    response = api_client_for(admin).post(TOOLS, _tool(definition={"depth": [[{"ok": 1}]], "big": 2**63 - 1}), format="json")
    assert response.status_code == 201, response.content


def test_a_ten_megabyte_json_body_is_a_413(api_client_for, admin):
    body = json.dumps(_tool(definition={"blob": "x" * (10 * 1024 * 1024)}))
    error = _envelope(_raw_json(api_client_for(admin), TOOLS, body), 413, "payload_too_large")
    assert "too large" in error["message"] or "larger than" in error["message"]


def test_a_ten_megabyte_form_body_is_a_413(api_client_for, admin):
    body = "name=" + "x" * (10 * 1024 * 1024)
    response = api_client_for(admin).generic("POST", MEMBERS, body, content_type="application/x-www-form-urlencoded")
    _envelope(response, 413, "payload_too_large")


def test_the_json_parser_stops_reading_past_the_limit():
    limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    stream = io.BytesIO(b"[" + b"1," * limit + b"1]")
    request = RequestFactory().post("/api/v1/x", content_type="application/json")
    request.META.pop("CONTENT_LENGTH", None)  # a chunked body declares no length
    with pytest.raises(Exception) as raised:
        read_bounded(stream, {"request": request})
    assert getattr(raised.value, "status_code", None) == 413
    assert stream.tell() == limit + 1


def test_more_form_fields_than_allowed_is_a_400(api_client_for, admin):
    body = "&".join(f"f{n}=1" for n in range(settings.DATA_UPLOAD_MAX_NUMBER_FIELDS + 1))
    response = api_client_for(admin).generic("POST", MEMBERS, body, content_type="application/x-www-form-urlencoded")
    assert "too many fields" in _envelope(response, 400)["message"]


def test_five_thousand_nested_arrays_are_a_400(api_client_for, admin):
    body = '{"name": "Search", "tool_kind": "primitive", "capability_key": "s", "definition": ' + "[" * 5000 + "]" * 5000 + "}"
    error = _envelope(_raw_json(api_client_for(admin), TOOLS, body), 400)
    assert "nested" in error["message"]


def test_json_deeper_than_the_limit_is_a_400_naming_the_field(api_client_for, admin):
    depth = settings.API_JSON_MAX_DEPTH + 1
    nested: object = 1
    for _ in range(depth):
        nested = [nested]
    error = _envelope(api_client_for(admin).post(TOOLS, _tool(definition=nested), format="json"), 400)
    assert next(iter(error["fields"])).startswith("definition.0.0")
    assert "nested more than" in error["message"]


@pytest.mark.parametrize("number", [2**63, -(2**63) - 1, 10**30])
def test_integers_beyond_64_bits_are_a_400_naming_the_field(api_client_for, admin, number):
    body = json.dumps(_tool(definition={"limits": [1, number]}))
    error = _envelope(_raw_json(api_client_for(admin), TOOLS, body), 400)
    assert error["fields"] == {"definition.limits.1": ["Integer is outside the 64-bit range."]}


def test_an_out_of_range_id_is_a_400_or_404_never_a_500(api_client_for, admin):
    client = api_client_for(admin)
    pk = WorkspaceMembership.objects.get(user=admin).pk
    _envelope(_raw_json(client, f"{MEMBERS}/{pk}", json.dumps({"role": 2**70}), method="PATCH"), 400)
    _envelope(client.get(f"{MEMBERS}/{10**30}"), 404, "not_found")
    _envelope(client.get(f"{TOOLS}/{10**30}"), 404, "not_found")


@pytest.mark.parametrize("number", ["1e400", "-1e400", "NaN", "Infinity"])
def test_non_finite_numbers_are_a_400(api_client_for, admin, number):
    body = '{"name": "Search", "tool_kind": "primitive", "capability_key": "s", "definition": {"x": ' + number + "}}"
    _envelope(_raw_json(api_client_for(admin), TOOLS, body), 400)


def test_a_nul_character_in_a_json_string_is_a_400_naming_the_field(api_client_for, admin):
    body = json.dumps(_tool(definition={"headers": {"X-Key": "abc\u0000def"}}))
    assert "\\u0000" in body
    error = _envelope(_raw_json(api_client_for(admin), TOOLS, body), 400)
    assert error["fields"] == {"definition.headers.X-Key": ["Null characters are not allowed."]}
    assert error["message"] == "Invalid input: definition.headers.X-Key: Null characters are not allowed."


def test_a_nul_character_in_a_json_key_or_top_level_field_is_a_400(api_client_for, admin):
    client = api_client_for(admin)
    key = _envelope(_raw_json(client, TOOLS, json.dumps(_tool(definition={"a\u0000": 1}))), 400)
    assert key["fields"] == {"definition": ["Null characters are not allowed in keys."]}
    name = _envelope(_raw_json(client, TOOLS, json.dumps(_tool(name="Se\u0000arch"))), 400)
    assert list(name["fields"]) == ["name"]


def test_a_bad_host_header_under_the_api_is_the_envelope(client):
    error = _envelope(client.get("/api/v1/me", HTTP_HOST="attacker.example"), 400, "invalid_host")
    assert "host" in error["message"].lower()


def test_a_bad_host_header_on_a_page_is_a_400_page(client):
    response = client.get("/accounts/login/", HTTP_HOST="attacker.example")
    assert response.status_code == 400
    assert response["Content-Type"].startswith("text/html")
    assert b"Bad request" in response.content


def test_schema_errors_are_the_json_envelope_not_yaml(db):
    from rest_framework.test import APIClient

    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION="Bearer act_not-a-token")
    _envelope(client.get("/api/schema/"), 401, "unauthenticated")


def test_unknown_methods_and_paths_use_the_envelope(api_client_for, admin):
    _envelope(api_client_for(admin).put("/api/v1/me", {}, format="json"), 405, "method_not_allowed")
    _envelope(api_client_for(admin).get("/api/nothing"), 404, "not_found")


# ---------------------------------------------------------------------------------- HTML pages
def test_a_ten_megabyte_form_on_a_page_is_a_413_page(client_for, admin, workspace):
    response = client_for(admin).post(
        reverse("workspaces:member_add", args=[workspace.slug]), {"username": "x" * (10 * 1024 * 1024), "role": "member"}
    )
    assert response.status_code == 413
    assert b"Request too large" in response.content


def test_too_many_form_fields_on_a_page_is_a_400_page(client_for, admin, workspace):
    body = "&".join(f"f{n}=1" for n in range(settings.DATA_UPLOAD_MAX_NUMBER_FIELDS + 1))
    response = client_for(admin).generic(
        "POST", reverse("workspaces:member_add", args=[workspace.slug]), body, content_type="application/x-www-form-urlencoded"
    )
    assert response.status_code == 400
    assert b"too many fields" in response.content
    assert not WorkspaceMembership.objects.filter(workspace=workspace).exclude(user=admin).exists()


def test_a_nul_character_in_a_form_is_a_field_error_not_a_500(client_for, admin, workspace):
    response = client_for(admin).post(
        reverse("workspaces:member_add", args=[workspace.slug]), {"username": "a\u0000b", "role": "member"}, follow=True
    )
    assert response.status_code == 200
    assert b"Null characters are not allowed" in response.content


@pytest.mark.parametrize("path", ["/w/acme/runs/", "/w/acme/comparisons/", "/w/acme/secrets/audit/", "/w/acme/packs/"])
@pytest.mark.parametrize("params", [{"pack": "9" * 30}, {"baseline": "9" * 30}, {"status": "\x00"}, {"action": "a\x00b"}])
def test_ugly_query_parameters_on_pages_are_never_a_500(client_for, admin, workspace, path, params):
    response = client_for(admin).get(path, params)
    assert response.status_code in {200, 400}, (path, params, response.status_code)
    if response.status_code == 400:
        assert b"Bad request" in response.content


@pytest.mark.parametrize(
    ("exception", "status"),
    [
        (RecursionError("maximum recursion depth exceeded"), 400),
        (OverflowError("Python int too large to convert to SQLite INTEGER"), 400),
        (DataError("PostgreSQL text fields cannot contain NUL (0x00) bytes"), 400),
    ],
)
def test_input_the_database_refuses_is_a_400_on_pages_and_in_the_api(admin, exception, status):
    middleware = ApiErrorMiddleware(lambda request: None)
    page_request = RequestFactory().post("/w/acme/tool-resources/new/")
    page_request.user = admin
    page = middleware.process_exception(page_request, exception)
    assert page is not None and page.status_code == status
    assert b"Bad request" in page.content
    api = middleware.process_exception(RequestFactory().post("/api/v1/workspaces/acme/x"), exception)
    assert api is not None and api.status_code == status
    assert json.loads(api.content)["error"]["code"] == "invalid_request"


def test_other_exceptions_on_pages_still_reach_the_500_handler(admin):
    middleware = ApiErrorMiddleware(lambda request: None)
    assert middleware.process_exception(RequestFactory().get("/w/acme/"), KeyError("bug")) is None


def test_a_model_validation_error_that_escapes_a_service_is_a_400_naming_its_field():
    response = exception_handler(ValidationError({"name": ["Ensure this value has at most 200 characters."]}), {})
    assert response is not None and response.status_code == 400
    assert response.data == {
        "error": {
            "code": "invalid_request",
            "message": "Invalid input: name: Ensure this value has at most 200 characters.",
            "fields": {"name": ["Ensure this value has at most 200 characters."]},
        }
    }


@pytest.mark.parametrize(
    ("query", "field"), [("limit=abc", "limit"), ("limit=0", "limit"), ("offset=-1", "offset"), ("offset=1e3", "offset")]
)
def test_a_bad_limit_or_offset_is_a_400_naming_it(api_client_for, admin, query, field):
    response = api_client_for(admin).get(f"/api/v1/workspaces/acme/runs?{query}")
    assert response.status_code == 400 and field in response.json()["error"]["fields"]


def test_a_limit_above_the_maximum_is_capped(api_client_for, admin):
    response = api_client_for(admin).get("/api/v1/workspaces/acme/runs?limit=100000&offset=0")
    assert response.status_code == 200 and response.json()["results"] == []


@pytest.mark.parametrize(
    ("path", "field"),
    [
        ("/api/v1/workspaces/acme/runs?pack=abc", "pack"),
        ("/api/v1/workspaces/acme/runs?status=bogus", "status"),
        ("/api/v1/workspaces/acme/deployments?include_archived=maybe", "include_archived"),
    ],
)
def test_a_malformed_list_filter_is_a_400_naming_it(api_client_for, admin, path, field):
    response = api_client_for(admin).get(path)
    assert response.status_code == 400 and field in response.json()["error"]["fields"]


def test_well_formed_list_filters_still_work(api_client_for, admin):
    client = api_client_for(admin)
    for path in ("runs?pack=7&status=running", "deployments?include_archived=true", "deployments?include_archived=0"):
        assert client.get(f"/api/v1/workspaces/acme/{path}").status_code == 200, path


def test_a_number_where_text_is_expected_is_a_400_naming_the_field(api_client_for, admin):
    response = api_client_for(admin).post("/api/v1/workspaces/acme/members", {"username": 0, "role": "viewer"}, format="json")
    assert response.status_code == 400 and "username" in response.json()["error"]["fields"]


def test_an_unknown_hook_path_is_the_json_envelope(client):
    response = client.post("/hooks/hosted/not-a-number/events", "{}", content_type="application/json")
    assert response.status_code == 404 and response.json()["error"]["code"] == "not_found"

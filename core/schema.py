"""drf-spectacular glue: bearer auth in the schema, and unique names for nested serializers.

Views keep their serializers nested (``FooApi.InputSerializer``, docs/style.md §18), so component
names are prefixed with the view's name; otherwise every view's "Input" would collide.
"""

from __future__ import annotations

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.openapi import AutoSchema as BaseAutoSchema


class AutoSchema(BaseAutoSchema):
    def _get_serializer_name(self, serializer, direction, bypass_extensions=False):
        name = super()._get_serializer_name(serializer, direction, bypass_extensions)
        cls = serializer if isinstance(serializer, type) else type(serializer)
        outer, _, inner = cls.__qualname__.rpartition(".")
        if outer and "<locals>" not in outer and not name.startswith(outer.split(".")[-1]):
            name = outer.replace(".", "") + name
        return name


class BearerTokenScheme(OpenApiAuthenticationExtension):
    target_class = "workspaces.authentication.BearerTokenAuthentication"
    name = "bearerAuth"

    def get_security_definition(self, auto_schema):
        return {"type": "http", "scheme": "bearer", "description": "Personal API token (act_…), created on the API tokens page."}


# The API's one error envelope (core/api.py), as the schema's ``Error`` component.
ERROR_COMPONENT = {
    "type": "object",
    "description": "Every error answer: `error.code` for programs, `error.message` for people, `error.fields` naming the inputs "
    "at fault; some errors add keys beside `error` (e.g. a pack's line-numbered `errors`).",
    "properties": {
        "error": {
            "type": "object",
            "properties": {
                "code": {
                    "type": "string",
                    "description": "e.g. invalid_request, unauthenticated, forbidden, not_found, conflict, throttled",
                },
                "message": {"type": "string"},
                "fields": {
                    "type": "object",
                    "additionalProperties": {},
                    "description": "input name → its problems (a list of sentences, or nested for nested input)",
                },
                "request_id": {"type": "string", "description": "On a 500: the X-Request-Id to quote when reporting it."},
            },
            "required": ["code", "message"],
        }
    },
    "required": ["error"],
    "additionalProperties": {},
}
ERROR_REF = {"$ref": "#/components/schemas/Error"}
_ERROR_WORDS = {
    "400": "Invalid input: `error.fields` names the field and what is wrong with it.",
    "401": "No valid credentials (a missing, bad, expired or revoked token).",
    "403": "Signed in, but the role in this workspace does not allow it.",
    "404": "No such object here (another workspace's objects are 404 too).",
    "409": "Conflicts with the current state (a duplicate, a concurrent change, a reused Idempotency-Key).",
    "413": "The request body is too large, or a stored-bytes quota is used up (quota_exceeded).",
    "415": "The body's Content-Type is not one this operation reads.",
    "429": "Too many requests: wait `Retry-After` seconds (RateLimit-* headers say the budget).",
}
_HEADERS = {
    "X-Request-Id": {"schema": {"type": "string"}, "description": "This request's id (also in the server's log lines)."},
    "RateLimit-Limit": {
        "schema": {"type": "integer"},
        "description": "Requests allowed per window for the budget this request counted against.",
    },
    "RateLimit-Remaining": {"schema": {"type": "integer"}, "description": "Requests left in the current window."},
    "RateLimit-Reset": {"schema": {"type": "integer"}, "description": "Seconds until the window ends."},
}
_WRITES = frozenset({"post", "put", "patch", "delete"})


def error_codes(path: str, method: str) -> list[str]:
    """The error answers an operation documents: every operation can be refused as bad input, unauthenticated,
    forbidden or throttled; one with a path parameter can be a 404; a write can conflict; a body can be
    too large or of a type the operation does not read."""
    codes = ["400", "401", "403"]
    if "{" in path:
        codes.append("404")
    if method in _WRITES:
        codes.append("409")
    if method in ("post", "put", "patch"):
        codes += ["413", "415"]
    codes.append("429")
    return codes


def document_error_responses(result: dict, generator: object, request: object, public: bool) -> dict:
    """drf-spectacular post-processing hook: the ``Error`` component, referenced by every operation's
    error answers (an answer a view described only in words gets the schema too), and the
    X-Request-Id and RateLimit-* headers on every answer."""
    components = result.setdefault("components", {})
    components.setdefault("schemas", {})["Error"] = ERROR_COMPONENT
    components.setdefault("headers", {}).update(_HEADERS)
    header_refs = {name: {"$ref": f"#/components/headers/{name}"} for name in _HEADERS}
    for path, operations in result.get("paths", {}).items():
        for method, operation in operations.items():
            if method not in ("get", "post", "put", "patch", "delete"):
                continue
            responses = operation.setdefault("responses", {})
            for code in error_codes(path, method):
                responses.setdefault(code, {"description": _ERROR_WORDS[code]})
            for code, answer in responses.items():
                if code.startswith(("4", "5")):
                    _as_error(answer)
            for answer in responses.values():
                answer.setdefault("headers", {}).update(header_refs)
    return result


def _as_error(answer: dict) -> None:
    """An error answer's JSON is the envelope: none given → ``Error``; a view's own body (a pack's
    errors beside the envelope) → that body with the envelope, or the bare envelope."""
    content = answer.setdefault("content", {})
    media = content.setdefault("application/json", {})
    schema = media.get("schema")
    if schema is None:
        media["schema"] = ERROR_REF
    elif schema != ERROR_REF and "anyOf" not in schema:
        # The view's body when its own refusal answers (a pack's errors beside the envelope), the
        # bare envelope when an earlier check refused the request (not UTF-8, too large …).
        media["schema"] = {"anyOf": [{"allOf": [ERROR_REF, schema]}, ERROR_REF]}

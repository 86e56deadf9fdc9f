"""One error envelope and one pagination style for the whole API.

Every error leaves as ``{"error": {"code", "message", "fields"?}, …}``. A service's
:class:`~core.errors.DomainError` is mapped here once (:func:`domain_error_body`); ``ApiError`` is
for API views refusing the HTTP request itself (a body too large or not UTF-8, a bad query
parameter); DRF's own exceptions and the bad-input family (:func:`core.errors.bad_input`) get the
same envelope.
"""

from __future__ import annotations

import logging
from typing import Any

from django.core.exceptions import PermissionDenied
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import IntegrityError
from django.http import Http404
from rest_framework import exceptions, serializers, status
from rest_framework.pagination import LimitOffsetPagination
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from core.errors import DomainError, bad_input
from core.request_id import current_request_id

logger = logging.getLogger(__name__)


_PAGE_NUMBER_MAX = 10**17


class Pagination(LimitOffsetPagination):
    """``?limit=&offset=`` pages; a limit or offset that is not a whole number in range is a 400
    naming it (DRF would silently fall back to the first page). A limit above ``max_limit`` is capped."""

    default_limit = 50
    max_limit = 500

    def _number(self, request: Any, name: str, minimum: int) -> int | None:
        raw = request.query_params.get(name)
        if raw is None:
            return None
        if not (raw.isascii() and raw.isdigit()) or len(raw) > 18 or not minimum <= int(raw) <= _PAGE_NUMBER_MAX:
            raise ApiError(
                400,
                "invalid_request",
                f"Invalid input: {name}: send a whole number of at least {minimum}.",
                fields={name: [f"a whole number ≥ {minimum}"]},
            )
        return int(raw)

    def get_limit(self, request: Any) -> int | None:
        limit = self._number(request, self.limit_query_param, 1)
        return self.default_limit if limit is None else min(limit, self.max_limit)

    def get_offset(self, request: Any) -> int:
        return self._number(request, self.offset_query_param, 0) or 0

    def get_schema_operation_parameters(self, view: Any) -> list[dict[str, Any]]:
        parameters = super().get_schema_operation_parameters(view)
        for parameter in parameters:
            parameter["schema"]["minimum"] = 1 if parameter["name"] == self.limit_query_param else 0
            parameter["schema"]["maximum"] = _PAGE_NUMBER_MAX  # beyond it a number is refused, not paged
        return parameters


_TRUE, _FALSE = frozenset({"true", "1", "yes"}), frozenset({"false", "0", "no", ""})


def query_bool(request: Any, name: str) -> bool:
    """A boolean query parameter (``true``/``false``, also ``1``/``0``, ``yes``/``no``); anything else is a 400 naming it."""
    raw = str(request.query_params.get(name, "")).lower()
    if raw not in _TRUE | _FALSE:
        raise ApiError(400, "invalid_request", f"Invalid input: {name}: send true or false.", fields={name: ["true or false"]})
    return raw in _TRUE


def query_int(request: Any, name: str) -> int | None:
    """An optional whole-number query parameter (an id); anything else is a 400 naming it."""
    raw = request.query_params.get(name)
    if raw is None or raw == "":
        return None
    if not (raw.isascii() and raw.isdigit()) or len(raw) > 18:
        raise ApiError(400, "invalid_request", f"Invalid input: {name}: send a whole number (an id).", fields={name: ["a whole number"]})
    return int(raw)


def query_choice(request: Any, name: str, choices: list[str]) -> str:
    """An optional query parameter from ``choices`` ("" when absent); anything else is a 400 naming it and them."""
    raw = str(request.query_params.get(name, ""))
    if raw and raw not in choices:
        raise ApiError(
            400, "invalid_request", f"Invalid input: {name}: one of {', '.join(choices)}.", fields={name: [f"one of {', '.join(choices)}"]}
        )
    return raw


class StrictCharField(serializers.CharField):
    """A text field that refuses a number or boolean instead of turning it into text (DRF's
    CharField takes ``0`` as ``"0"``, which the schema's ``type: string`` says is wrong)."""

    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str):
            self.fail("invalid")
        return str(super().to_internal_value(data))


class ApiError(exceptions.APIException):
    """An error with our own code, e.g. ``ApiError(409, "challenge_pack_version_exists", "…")``."""

    def __init__(self, status_code: int, code: str, message: str, fields: dict | None = None, extra: dict | None = None):
        self.status_code = status_code
        self.code = code
        self.message = message
        self.fields = fields
        self.extra = extra or {}
        super().__init__(detail=message, code=code)


_CODES = {
    400: "invalid_request",
    401: "unauthenticated",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    406: "not_acceptable",
    409: "conflict",
    413: "payload_too_large",
    415: "unsupported_media_type",
    429: "throttled",
}


def error_body(code: str, message: str, fields: dict | None = None, **extra: Any) -> dict:
    error: dict[str, Any] = {"code": code, "message": message}
    if fields:
        error["fields"] = fields
    body: dict[str, Any] = {"error": error}
    body.update(extra)
    return body


def server_error_body() -> dict:
    """The 500 envelope, with the request's ``X-Request-Id`` to quote when reporting it."""
    request_id = current_request_id()
    where = f" with request id {request_id}" if request_id else ""
    body = error_body("server_error", f"Something went wrong on our side. The error has been logged{where}.")
    if request_id:
        body["error"]["request_id"] = request_id
    return body


def domain_error_body(error: DomainError) -> dict:
    """A :class:`DomainError` as the envelope: a 400 about a field reads like a serializer's
    ``Invalid input: field: message``; ``fields`` names the field whatever the status."""
    fields = {error.field: [error.message]} if error.field else None
    message = f"Invalid input: {error.field}: {error.message}" if error.status == 400 and error.field else error.message
    return error_body(error.code, message, fields, **error.extra)


def _flatten(detail: Any) -> Any:
    if isinstance(detail, dict):
        return {key: _flatten(value) for key, value in detail.items()}
    if isinstance(detail, list):
        if all(not isinstance(item, dict | list) for item in detail):
            return [str(item) for item in detail]
        return [_flatten(item) for item in detail]
    return [str(detail)]


def exception_handler(exc: Exception, context: dict) -> Response | None:
    if isinstance(exc, DjangoValidationError):
        # A model's full_clean() called directly (artifact uploads and attachments still do): the same 400 as a DomainError.
        exc = DomainError.from_validation_error(exc)
    if isinstance(exc, DomainError):
        return Response(domain_error_body(exc), status=exc.status)
    problem = bad_input(exc)
    if problem is not None:
        logger.warning("Refused API input: %s: %s", type(exc).__name__, exc)
        exc = ApiError(problem.status, problem.code, problem.message)
    elif isinstance(exc, IntegrityError):
        # A unique constraint refused a write a concurrent request made first, somewhere a service
        # does not turn it into its own Conflict (core.writes): still a 409, never a 500.
        logger.warning("Concurrent write refused by the database: %s", exc)
        exc = ApiError(409, "conflict", "Another request changed the same data at the same time: reload and try again.")
    if isinstance(exc, ApiError):
        return Response(error_body(exc.code, exc.message, exc.fields, **exc.extra), status=exc.status_code)
    if isinstance(exc, Http404):
        exc = exceptions.NotFound()
    elif isinstance(exc, PermissionDenied):
        exc = exceptions.PermissionDenied()
    response = drf_exception_handler(exc, context)
    if response is None:
        logger.exception("Unhandled API error", exc_info=exc)
        return Response(server_error_body(), status=status.HTTP_500_INTERNAL_SERVER_ERROR)
    if isinstance(exc, exceptions.ValidationError):
        fields = _flatten(exc.detail) if isinstance(exc.detail, dict) else {"non_field_errors": _flatten(exc.detail)}
        first = next(iter(fields.items()), None)
        message = "Invalid input."
        if first:
            value = first[1]
            text = value[0] if isinstance(value, list) and value and isinstance(value[0], str) else str(value)
            message = f"Invalid input: {first[0]}: {text}"
        response.data = error_body("invalid_request", message, fields)
        return response
    code = _CODES.get(response.status_code) or getattr(exc, "default_code", None) or "error"
    if isinstance(exc, exceptions.NotAuthenticated | exceptions.AuthenticationFailed):
        code = "unauthenticated"
    detail = getattr(exc, "detail", "")
    message = str(detail) if not isinstance(detail, dict | list) else "Request failed."
    response.data = error_body(code, message)
    return response

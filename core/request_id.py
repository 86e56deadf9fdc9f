"""``X-Request-Id``: one id per request, on its response, in its log lines and in a 500's body.

A sane incoming id (from a proxy or a client: 1–128 characters of letters, digits and ``._:-``)
is kept so one request can be followed across systems; anything else is replaced by a new random
id. The id lives in a context variable while the request runs, so every log record made for it
carries it (:class:`RequestIdLogFilter`, ``%(request_id)s`` in the log format) without passing it
around.
"""

from __future__ import annotations

import contextvars
import logging
import re
import uuid
from collections.abc import Callable

from django.http import HttpRequest, HttpResponse

HEADER = "X-Request-Id"
_SANE = re.compile(r"[A-Za-z0-9._:-]{1,128}")
_current: contextvars.ContextVar[str] = contextvars.ContextVar("request_id", default="-")


def current_request_id() -> str | None:
    """The id of the request being served on this thread, or None outside a request."""
    value = _current.get()
    return None if value == "-" else value


def request_id_for(request: HttpRequest) -> str:
    incoming = request.headers.get(HEADER, "")
    return incoming if _SANE.fullmatch(incoming) else uuid.uuid4().hex


class RequestIdMiddleware:
    """First in the chain, so every answer (errors of later middleware included) carries the id."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        request_id = request_id_for(request)
        request.request_id = request_id  # type: ignore[attr-defined]
        # Not reset on the way out: Django logs a 4xx/5xx ("django.request") after the middleware
        # chain returned, and that line must carry the id too. The next request sets its own.
        _current.set(request_id)
        response = self.get_response(request)
        response[HEADER] = request_id
        return response


class RequestIdLogFilter(logging.Filter):
    """Adds ``request_id`` to every record (``-`` outside a request) for the log format."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.request_id = _current.get()
        return True

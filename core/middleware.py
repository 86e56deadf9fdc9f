"""Error responses: the API's envelope for everything under /api/, and a 400 page for bad input.

Django-level errors (a 404 from the URL resolver, a 403 from CSRF, a YAML-rendered schema error)
under /api/ become the API's JSON envelope. An exception the request's content caused (too
large, too many fields, nested too deeply, a number or character the database refuses) is a
400 (413 for size) on every path, never a 500.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from django.conf import settings
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render

from core.api import _CODES, error_body, server_error_body
from core.errors import bad_input
from core.throttling import ratelimit_headers

logger = logging.getLogger(__name__)

# Headers an error response must keep when its body is rewritten.
KEPT_HEADERS = ("Retry-After", "WWW-Authenticate", "Allow", "X-Request-Id")

_MESSAGES = {
    401: "Authentication credentials were not provided or are invalid.",
    403: "You do not have permission to perform this action.",
    404: "Not found.",
    405: "Method not allowed.",
    413: "The request body is too large.",
    429: "Too many requests. Try again later.",
}


def is_api_path(request: HttpRequest) -> bool:
    """The API and the hosted agents' callback (``/hooks/``): machines, answered in the JSON envelope."""
    return request.path.startswith(("/api/", "/hooks/"))


def api_error_response(status: int, code: str | None = None, message: str | None = None) -> JsonResponse:
    if status == 500:
        return JsonResponse(server_error_body(), status=status)
    code = code or _CODES.get(status) or ("server_error" if status >= 500 else "error")
    if message is None:
        message = _MESSAGES.get(status) or ("Something went wrong on our side." if status >= 500 else "Request failed.")
    return JsonResponse(error_body(code, message), status=status)


def _as_envelope(response: HttpResponse) -> HttpResponse:
    data = getattr(response, "data", None)
    if isinstance(data, dict) and isinstance(data.get("error"), dict):
        envelope: HttpResponse = JsonResponse(data, status=response.status_code)
    else:
        envelope = api_error_response(response.status_code)
    for header in KEPT_HEADERS:
        if header in response:
            envelope[header] = response[header]
    return envelope


def bad_input_page(request: HttpRequest, status: int, message: str) -> HttpResponse:
    try:
        return render(request, "400.html", {"status": status, "message": message}, status=status)
    except Exception:  # a malformed request must still get an answer
        logger.exception("Could not render the 400 page")
        return HttpResponse(message, status=status, content_type="text/plain; charset=utf-8")


def not_found_page(request: HttpRequest) -> HttpResponse:
    return render(request, "404.html", {"request_path": request.path}, status=404)


class ApiErrorMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if not is_api_path(request):
            if response.status_code == 404 and settings.DEBUG and getattr(request, "resolver_match", None) is None:
                # An unknown URL under DEBUG (the default local setup): Django answered with its
                # technical page, which lists every URL pattern; a person gets ours.
                return not_found_page(request)
            return response
        if response.status_code >= 400 and not response.get("Content-Type", "").startswith("application/json"):
            response = _as_envelope(response)
        ratelimit_headers(request, response)
        return response

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        problem = bad_input(exception)
        if problem is not None:
            logger.warning("Refused input on %s: %s: %s", request.path, type(exception).__name__, exception)
            if is_api_path(request):
                return api_error_response(problem.status, problem.code, problem.message)
            return bad_input_page(request, problem.status, problem.message)
        if not is_api_path(request):
            if isinstance(exception, Http404) and settings.DEBUG:
                return not_found_page(request)  # Django's DEBUG page would show instead of ours
            return None
        logger.exception("Unhandled error under /api/", exc_info=exception)
        return api_error_response(500, "server_error", "Something went wrong on our side. The error has been logged.")

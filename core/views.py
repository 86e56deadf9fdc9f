"""Error handlers (``handler400`` … ``handler500`` in the root URLconf), API-aware.

Django calls these for errors raised before or around a view, e.g. ``DisallowedHost`` from a bad
Host header or ``RequestDataTooBig`` while CSRF reads a form; under /api/ they answer with the
API's JSON envelope, elsewhere with our pages.
"""

from __future__ import annotations

from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.views import defaults

from core.errors import bad_input
from core.middleware import api_error_response, bad_input_page, is_api_path


def bad_request(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    problem = bad_input(exception)
    status = problem.status if problem else 400
    code = problem.code if problem else "invalid_request"
    message = problem.message if problem else "The request was malformed."
    if is_api_path(request):
        return api_error_response(status, code, message)
    return bad_input_page(request, status, message)


def permission_denied(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    if is_api_path(request):
        return api_error_response(403)
    return defaults.permission_denied(request, exception if exception is not None else PermissionDenied())


def page_not_found(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    if is_api_path(request):
        return api_error_response(404)
    return defaults.page_not_found(request, exception)


def server_error(request: HttpRequest) -> HttpResponse:
    if is_api_path(request):
        return api_error_response(500, "server_error", "Something went wrong on our side. The error has been logged.")
    return defaults.server_error(request)

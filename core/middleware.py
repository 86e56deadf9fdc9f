"""Gives Django-level 404s and 500s under /api/ the API's error envelope."""

from __future__ import annotations

import logging
from collections.abc import Callable

from django.http import HttpRequest, HttpResponse, JsonResponse

from core.api import error_body

logger = logging.getLogger(__name__)


class ApiErrorMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if not request.path.startswith("/api/") or response.get("Content-Type", "").startswith("application/json"):
            return response
        if response.status_code == 404:
            return JsonResponse(error_body("not_found", "Not found."), status=404)
        if response.status_code == 403:
            return JsonResponse(error_body("forbidden", "You do not have permission to perform this action."), status=403)
        return response

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if not request.path.startswith("/api/"):
            return None
        logger.exception("Unhandled error under /api/", exc_info=exception)
        return JsonResponse(error_body("server_error", "Something went wrong on our side. The error has been logged."), status=500)

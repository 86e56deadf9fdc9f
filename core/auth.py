"""Login lockout (django-axes) for the two login pages."""

from __future__ import annotations

from typing import Any

from axes.backends import AxesStandaloneBackend
from axes.helpers import get_client_username, get_cool_off, get_failure_limit
from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render


class LoginLockoutBackend(AxesStandaloneBackend):
    """Axes' lockout check, for ``authenticate()`` calls that come from a web request.

    Both login pages (``/accounts/login/`` and ``/admin/login/``) pass the request. Calls without
    one (management commands, the test client's ``login()``) are not login attempts from a client
    address, so there is nothing to count or lock; axes itself would raise instead.
    """

    def authenticate(self, request: Any, username: str | None = None, password: str | None = None, **kwargs: Any) -> None:
        if request is None:
            return None
        return super().authenticate(request, username=username, password=password, **kwargs)


def lockout_response(request: HttpRequest, original_response: HttpResponse | None = None, credentials: dict | None = None) -> HttpResponse:
    """The page both login forms show once a username is locked from this address (429)."""
    cool_off = get_cool_off(request)
    minutes = max(1, round(cool_off.total_seconds() / 60)) if cool_off else None
    context = {
        "username": get_client_username(request, credentials) or "",
        "failure_limit": get_failure_limit(request, credentials),
        "cooloff_minutes": minutes,
    }
    response = render(request, "registration/locked_out.html", context, status=settings.AXES_HTTP_RESPONSE_CODE)
    if minutes:
        response["Retry-After"] = str(minutes * 60)
    return response

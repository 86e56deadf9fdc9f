"""Pages for sections that are not built yet say so plainly (no fake content)."""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from workspaces.access import workspace_view


def not_available(section: str) -> Callable[..., HttpResponse]:
    @workspace_view()
    def view(request: HttpRequest, **kwargs: object) -> HttpResponse:
        return render(request, "not_available.html", {"section": section})

    view.__name__ = f"not_available_{section.lower().replace(' ', '_')}"
    return view

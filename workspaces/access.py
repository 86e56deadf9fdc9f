"""The one place that decides who may see and change what (docs/style.md §9).

A user who is not a member of a workspace gets 404 for anything in it, so existence never
leaks; a member whose role is too low gets 403. Every HTML view and API view goes through here.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

from django.contrib.auth.decorators import login_required
from django.core.exceptions import ObjectDoesNotExist, PermissionDenied
from django.db.models import Manager, Model, QuerySet
from django.http import Http404, HttpRequest, HttpResponse
from django_htmx.middleware import HtmxDetails

from workspaces.models import ROLE_RANK, Role, Workspace, WorkspaceMembership

M = TypeVar("M", bound=Model)


class WorkspaceRequest(HttpRequest):
    """The request a :func:`workspace_view` hands its view: for type checking only (views are
    annotated with it; at run time it is Django's request with these attributes set)."""

    workspace: Workspace
    membership: WorkspaceMembership
    htmx: HtmxDetails  # set by django_htmx's middleware on every request


def membership_get(*, user: Any, workspace_slug: str) -> WorkspaceMembership:
    """The user's membership of the workspace, or 404 (also for anonymous users and strangers)."""
    if not getattr(user, "is_authenticated", False):
        raise Http404("Workspace not found")
    try:
        return WorkspaceMembership.objects.select_related("workspace").get(workspace__slug=workspace_slug, user=user)
    except WorkspaceMembership.DoesNotExist:
        raise Http404("Workspace not found") from None


def require_role(membership: WorkspaceMembership, minimum: str) -> None:
    if ROLE_RANK[Role(membership.role)] < ROLE_RANK[Role(minimum)]:
        raise PermissionDenied(f"This needs the {minimum} role in this workspace.")


def workspace_get_for_user(*, user: Any, workspace_slug: str, role: str = Role.VIEWER) -> tuple[Workspace, WorkspaceMembership]:
    membership = membership_get(user=user, workspace_slug=workspace_slug)
    require_role(membership, role)
    return membership.workspace, membership


def object_get_for_workspace(queryset: QuerySet[M] | Manager[M], *, workspace: Workspace, **lookup: Any) -> M:
    """An object of this workspace by user-supplied id; another workspace's object is 404."""
    try:
        return queryset.get(workspace=workspace, **lookup)
    except (ObjectDoesNotExist, ValueError, TypeError):
        raise Http404(f"{str(queryset.model._meta.verbose_name).capitalize()} not found") from None


def workspace_view(role: str = Role.VIEWER) -> Callable:
    """Decorator for HTML views under /w/<workspace_slug>/: login, membership, role.

    The view receives ``request.workspace`` and ``request.membership``.
    """

    def decorator(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
        @login_required
        @functools.wraps(view)
        def wrapper(request: HttpRequest, workspace_slug: str, *args: Any, **kwargs: Any) -> HttpResponse:
            workspace, membership = workspace_get_for_user(user=request.user, workspace_slug=workspace_slug, role=role)
            request.workspace = workspace  # type: ignore[attr-defined]
            request.membership = membership  # type: ignore[attr-defined]
            return view(request, *args, **kwargs)

        return wrapper

    return decorator


def can(membership: WorkspaceMembership | None, minimum: str) -> bool:
    return membership is not None and membership.has_role(minimum)

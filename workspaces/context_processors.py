"""Navigation data for base.html: the current workspace and the user's other workspaces."""

from __future__ import annotations

import re

from django.http import HttpRequest

_REFERER_SLUG = re.compile(r"^https?://[^/]+/w/([^/?#]+)/")


def navigation(request: HttpRequest) -> dict:
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {}
    from workspaces.selectors import memberships_for_user

    workspace = getattr(request, "workspace", None)
    membership = getattr(request, "membership", None)
    memberships = memberships_for_user(user=user)
    if workspace is None:
        # A page outside any workspace (API tokens, API docs) keeps a workspace's menu (issue 25:
        # it had none): the one the user came from, else their first; only where they are a member.
        came_from = _REFERER_SLUG.search(request.META.get("HTTP_REFERER") or "")
        slug = came_from.group(1) if came_from else None
        listed = list(memberships)
        membership = next((m for m in listed if m.workspace.slug == slug), listed[0] if listed else None)
        workspace = membership.workspace if membership is not None else None
    return {
        "current_workspace": workspace,
        "current_membership": membership,
        "user_memberships": memberships,
        "is_ws_admin": bool(membership and membership.role == "admin"),
        "is_ws_member": bool(membership and membership.role in ("admin", "member")),
    }

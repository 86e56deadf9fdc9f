"""Navigation data for base.html: the current workspace and the user's other workspaces."""

from __future__ import annotations

from django.http import HttpRequest


def navigation(request: HttpRequest) -> dict:
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {}
    from workspaces.access import LAST_WORKSPACE_KEY
    from workspaces.selectors import memberships_for_user

    workspace = getattr(request, "workspace", None)
    membership = getattr(request, "membership", None)
    memberships = memberships_for_user(user=user)
    if workspace is None and hasattr(request, "session"):
        # A page outside any workspace: the menu of the workspace last opened (still a member of it).
        last = request.session.get(LAST_WORKSPACE_KEY)
        membership = next((m for m in memberships if m.workspace_id == last), None)
        workspace = membership.workspace if membership is not None else None
    return {
        "current_workspace": workspace,
        "current_membership": membership,
        "user_memberships": memberships,
        "is_ws_admin": bool(membership and membership.role == "admin"),
        "is_ws_member": bool(membership and membership.role in ("admin", "member")),
    }

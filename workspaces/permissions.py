"""What an API token's workspace and scope allow (docs/operations.md "API tokens"), checked for
every API view (``REST_FRAMEWORK["DEFAULT_PERMISSION_CLASSES"]``) on top of the user's role,
which the view itself checks."""

from __future__ import annotations

from typing import Any

from rest_framework import exceptions, permissions

from workspaces.models import SCOPE_RANK, ApiToken, TokenScope

SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


def required_scope(view: object, method: str) -> str:
    """The token scope a request needs: ``read`` for a read, else what the view says for the method
    (``token_scope = {"POST": TokenScope.RUN}`` on the views that start runs and gates), else ``admin``."""
    if method in SAFE_METHODS:
        return TokenScope.READ
    scopes = getattr(view, "token_scope", None) or {}
    return str(scopes.get(method, TokenScope.ADMIN))


def token_limits_check(token: ApiToken, *, method: str, view: object, kwargs: dict[str, Any]) -> None:
    """Refuse what the token's workspace and scope do not allow: another workspace is a 404, as for
    a stranger; a request beyond the scope, or a write outside any workspace by a limited token
    (tokens, invitations, installation settings), a 403."""
    slug = kwargs.get("workspace_slug")
    if token.workspace_id is not None and slug is not None and token.workspace is not None and slug != token.workspace.slug:
        raise exceptions.NotFound("Workspace not found.")
    if slug is None and method not in SAFE_METHODS and (token.workspace_id is not None or token.scope != TokenScope.ADMIN):
        raise exceptions.PermissionDenied(
            "This token is limited (to one workspace, or to a scope below admin): it cannot change anything outside a workspace. "
            "Use a full token or sign in."
        )
    needed = required_scope(view, method)
    if SCOPE_RANK[TokenScope(token.scope)] < SCOPE_RANK[TokenScope(needed)]:
        raise exceptions.PermissionDenied(f"This token's scope is {token.scope}: {method} here needs a token with the {needed} scope.")


def token_of(request: Any) -> ApiToken | None:
    """The API token that authenticated the request (None: a signed-in session)."""
    auth = getattr(request, "auth", None)
    return auth if isinstance(auth, ApiToken) else None


class TokenLimits(permissions.BasePermission):
    """Every API view's check of the token's workspace and scope (a session passes)."""

    def has_permission(self, request: Any, view: Any) -> bool:
        token = token_of(request)
        if token is not None:
            token_limits_check(token, method=request.method, view=view, kwargs=getattr(view, "kwargs", None) or {})
        return True

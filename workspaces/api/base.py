"""Base class for every API view under /api/v1/workspaces/<slug>/…

Resolves the workspace through the access helper (stranger → 404, low role → 403) before the
handler runs. Subclasses set ``read_role`` / ``write_role`` or override ``required_role``.
"""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.serializers import BaseSerializer
from rest_framework.views import APIView

from core.api import Pagination
from workspaces.access import workspace_get_for_user
from workspaces.models import Role, Workspace, WorkspaceMembership

SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


class WorkspaceApiView(APIView):
    # Lists answered with ``paginate`` are documented as pages (``count``, ``next``, ``previous``,
    # ``results``; ``limit``/``offset``); a view whose list is not paged sets it to None.
    pagination_class: type[Pagination] | None = Pagination
    read_role: str = Role.VIEWER
    write_role: str = Role.MEMBER
    workspace: Workspace
    membership: WorkspaceMembership

    def required_role(self, request: Request) -> str:
        return self.read_role if request.method in SAFE_METHODS else self.write_role

    def initial(self, request: Request, *args: object, **kwargs: object) -> None:
        super().initial(request, *args, **kwargs)
        self.workspace, self.membership = workspace_get_for_user(
            user=request.user, workspace_slug=str(kwargs["workspace_slug"]), role=self.required_role(request)
        )

    def paginate(self, request: Request, queryset: QuerySet[Any] | list[Any], serializer_class: type[BaseSerializer[Any]]) -> Response:
        """Limit/offset page of ``queryset`` rendered with ``serializer_class``."""
        paginator = Pagination()
        page: list[Any] | None = paginator.paginate_queryset(queryset, request, view=self)
        return paginator.get_paginated_response(serializer_class(page, many=True).data)

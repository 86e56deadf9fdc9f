"""The API side of the collections' one pattern (``infrastructure/crud.py``): one APIView per
action, each collection's views stating only its :class:`~infrastructure.crud.Entity`, its
``OutputSerializer`` and its nested ``InputSerializer``; the handlers, the write role and the
OpenAPI description (``extend_schema_view``) come from here.

Per collection: ``<Entity>ListApi`` (GET list, POST create), ``<Entity>DetailApi`` (GET, PATCH)
and ``<Entity>ArchiveApi`` (POST). Every id goes through ``Entity.get`` (404 for another
workspace's object); a service's DomainError is the API's error envelope (core/api.py).
"""

from __future__ import annotations

from typing import Any, ClassVar

from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_view
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from core.api import query_bool
from infrastructure.crud import Entity
from workspaces.api.base import WorkspaceApiView

INCLUDE_ARCHIVED = OpenApiParameter("include_archived", bool, description="Also list archived objects")


def _include_archived(request: Request) -> bool:
    return query_bool(request, "include_archived")


class EntityApi(WorkspaceApiView):
    """What every collection view shares: ``entity`` sets the write role and names the summaries."""

    entity: ClassVar[Entity[Any]]
    OutputSerializer: ClassVar[type[serializers.Serializer]]
    InputSerializer: ClassVar[type[serializers.Serializer]]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "entity" in cls.__dict__:  # a collection's view, not one of the bases below
            cls.write_role = cls.entity.manage_role
            extend_schema_view(**cls.schemas())(cls)

    @classmethod
    def schemas(cls) -> dict[str, Any]:
        return {}

    @classmethod
    def role_note(cls) -> str:
        return f"({cls.entity.manage_role})"

    def service_fields(self, data: dict[str, Any]) -> dict[str, Any]:
        """The validated input as the services' arguments (the serializer's field names are theirs)."""
        return dict(data)


class EntityListApi(EntityApi):
    @classmethod
    def schemas(cls) -> dict[str, Any]:
        entity = cls.entity
        return {
            "get": extend_schema(parameters=[INCLUDE_ARCHIVED], responses=cls.OutputSerializer(many=True), summary=f"List {entity.plural}"),
            "post": extend_schema(
                request=cls.InputSerializer,
                responses={201: cls.OutputSerializer},
                summary=f"Create {entity.with_article} {cls.role_note()}",
            ),
        }

    def get(self, request: Request, workspace_slug: str) -> Response:
        objects = self.entity.select(workspace=self.workspace, include_archived=_include_archived(request))
        return self.paginate(request, objects, self.OutputSerializer)

    def post(self, request: Request, workspace_slug: str) -> Response:
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        obj = self.entity.save(None, workspace=self.workspace, actor=request.user, fields=self.service_fields(data.validated_data))
        return Response(self.OutputSerializer(obj).data, status=status.HTTP_201_CREATED)


class EntityDetailApi(EntityApi):
    @classmethod
    def schemas(cls) -> dict[str, Any]:
        entity = cls.entity
        return {
            "get": extend_schema(responses=cls.OutputSerializer, summary=f"One {entity.noun}"),
            "patch": extend_schema(
                request=cls.InputSerializer, responses=cls.OutputSerializer, summary=f"Change {entity.with_article} {cls.role_note()}"
            ),
        }

    def get(self, request: Request, workspace_slug: str, pk: int) -> Response:
        return Response(self.OutputSerializer(self.entity.get(workspace=self.workspace, pk=pk)).data)

    def patch(self, request: Request, workspace_slug: str, pk: int) -> Response:
        obj = self.entity.get(workspace=self.workspace, pk=pk)
        data = self.InputSerializer(data=request.data, partial=True)
        data.is_valid(raise_exception=True)
        obj = self.entity.save(obj, workspace=self.workspace, actor=request.user, fields=self.service_fields(data.validated_data))
        return Response(self.OutputSerializer(obj).data)


class EntityArchiveApi(EntityApi):
    @classmethod
    def schemas(cls) -> dict[str, Any]:
        return {
            "post": extend_schema(
                request=None, responses=cls.OutputSerializer, summary=f"Archive {cls.entity.with_article} {cls.role_note()}"
            )
        }

    def post(self, request: Request, workspace_slug: str, pk: int) -> Response:
        obj = self.entity.get(workspace=self.workspace, pk=pk)
        return Response(self.OutputSerializer(self.entity.archive_one(obj, actor=request.user)).data)

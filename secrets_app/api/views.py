"""Secrets API: list keys and allowed hosts, set (PUT) and delete by key. Values are write-only."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from secrets_app import selectors, services
from secrets_app.models import WorkspaceSecret
from workspaces.access import object_get_for_workspace
from workspaces.api.base import WorkspaceApiView
from workspaces.models import Role


class SecretOutputSerializer(serializers.Serializer):
    key = serializers.CharField()
    allowed_hosts = serializers.ListField(
        child=serializers.CharField(), help_text="Where composed tools may send the value; empty = nowhere."
    )
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()
    created_by = serializers.CharField(source="created_by.username", default=None, allow_null=True)
    updated_by = serializers.CharField(source="updated_by.username", default=None, allow_null=True)


class SecretListApi(WorkspaceApiView):
    read_role = Role.VIEWER

    @extend_schema(responses=SecretOutputSerializer(many=True), summary="List secret keys and allowed hosts (values are never returned)")
    def get(self, request: Request, workspace_slug: str) -> Response:
        return self.paginate(request, selectors.secret_list(workspace=self.workspace), SecretOutputSerializer)


class SecretDetailApi(WorkspaceApiView):
    """PUT sets or replaces a secret, DELETE removes it; both need the admin role."""

    read_role = Role.ADMIN
    write_role = Role.ADMIN

    class InputSerializer(serializers.Serializer):
        value = serializers.CharField(
            required=False,
            allow_blank=True,
            trim_whitespace=False,
            write_only=True,
            style={"input_type": "password"},
            help_text="Write-only. Required to create; omit it to keep the stored value.",
        )
        allowed_hosts = serializers.ListField(
            child=serializers.CharField(allow_blank=True),
            required=False,
            help_text='Host globs with an optional port ("api.example.com", "*.example.org:443"); omit to keep, [] to clear.',
        )

    @extend_schema(
        request=InputSerializer,
        responses={200: SecretOutputSerializer, 201: SecretOutputSerializer},
        summary="Set a secret's value and/or allowed hosts (201 created, 200 updated; admin)",
    )
    def put(self, request: Request, workspace_slug: str, key: str) -> Response:
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        secret, created = services.secret_set(
            workspace=self.workspace,
            key=key,
            value=data.validated_data.get("value"),
            allowed_hosts=data.validated_data.get("allowed_hosts"),
            actor=request.user,
        )
        return Response(SecretOutputSerializer(secret).data, status=status.HTTP_201_CREATED if created else status.HTTP_200_OK)

    @extend_schema(responses={204: None}, summary="Delete a secret (admin)")
    def delete(self, request: Request, workspace_slug: str, key: str) -> Response:
        secret = object_get_for_workspace(WorkspaceSecret.objects.select_related("workspace"), workspace=self.workspace, key=key)
        services.secret_delete(secret=secret, actor=request.user)
        return Response(status=status.HTTP_204_NO_CONTENT)

"""Tenancy API: me, workspaces, members."""

from __future__ import annotations

from typing import cast

from django.contrib.auth.models import User
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from core.api import Pagination, StrictCharField
from workspaces import selectors, services
from workspaces.access import object_get_for_workspace
from workspaces.api.base import WorkspaceApiView
from workspaces.models import Role, WorkspaceMembership


class WorkspaceOutputSerializer(serializers.Serializer):
    slug = serializers.CharField()
    name = serializers.CharField()
    role = serializers.CharField()


def _workspace_out(membership: WorkspaceMembership) -> dict:
    return {"slug": membership.workspace.slug, "name": membership.workspace.name, "role": membership.role}


class MeApi(APIView):
    class OutputSerializer(serializers.Serializer):
        id = serializers.IntegerField()
        username = serializers.CharField()
        email = serializers.CharField()
        memberships = WorkspaceOutputSerializer(many=True)

    @extend_schema(responses=OutputSerializer, summary="The authenticated user and their workspaces")
    def get(self, request: Request) -> Response:
        user = cast(User, request.user)  # IsAuthenticated (the default permission) ran first
        memberships = [_workspace_out(m) for m in selectors.memberships_for_user(user=user)]
        return Response({"id": user.pk, "username": user.username, "email": user.email, "memberships": memberships})


class WorkspaceListApi(APIView):
    pagination_class = Pagination

    @extend_schema(responses=WorkspaceOutputSerializer(many=True), summary="Workspaces the user belongs to")
    def get(self, request: Request) -> Response:
        paginator = Pagination()
        page = paginator.paginate_queryset(selectors.memberships_for_user(user=request.user), request, view=self)
        return paginator.get_paginated_response([_workspace_out(m) for m in page or []])


class WorkspaceDetailApi(WorkspaceApiView):
    class OutputSerializer(WorkspaceOutputSerializer):
        member_count = serializers.IntegerField()

    @extend_schema(responses=OutputSerializer, summary="One workspace")
    def get(self, request: Request, workspace_slug: str) -> Response:
        data = _workspace_out(self.membership)
        data["member_count"] = self.workspace.memberships.count()
        return Response(data)


class MemberOutputSerializer(serializers.Serializer):
    """A member as other members see them: never their email (it is theirs to share)."""

    id = serializers.IntegerField()
    username = serializers.CharField(source="user.username")
    role = serializers.CharField()
    created_at = serializers.DateTimeField()


class MemberListApi(WorkspaceApiView):
    read_role = Role.ADMIN
    write_role = Role.ADMIN

    class InputSerializer(serializers.Serializer):
        username = StrictCharField(max_length=150)
        role = serializers.ChoiceField(choices=Role.choices)

    class AddedOutputSerializer(serializers.Serializer):
        username = serializers.CharField()
        role = serializers.CharField()
        message = serializers.CharField()

    @extend_schema(responses=MemberOutputSerializer(many=True), summary="List members (admin)")
    def get(self, request: Request, workspace_slug: str) -> Response:
        return self.paginate(request, selectors.members_of(workspace=self.workspace), MemberOutputSerializer)

    @extend_schema(
        request=InputSerializer,
        responses={202: AddedOutputSerializer},
        summary="Add an existing user by username (admin)",
        description="Answers 202 with the same body whether or not the user exists, so user names cannot be probed. "
        "List the members to see who was added.",
    )
    def post(self, request: Request, workspace_slug: str) -> Response:
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        username, role = data.validated_data["username"].strip(), data.validated_data["role"]
        services.membership_add_by_username(workspace=self.workspace, username=username, role=role, actor=request.user)
        message = services.member_added_message(username=username, role=role)
        return Response({"username": username, "role": role, "message": message}, status=status.HTTP_202_ACCEPTED)


class MemberLeaveApi(WorkspaceApiView):
    read_role = Role.VIEWER
    write_role = Role.VIEWER

    @extend_schema(request=None, responses={204: None}, summary="Leave the workspace (any member; not its last admin)")
    def delete(self, request: Request, workspace_slug: str) -> Response:
        services.membership_leave(workspace=self.workspace, user=request.user)
        return Response(status=status.HTTP_204_NO_CONTENT)


class MemberDetailApi(WorkspaceApiView):
    read_role = Role.ADMIN
    write_role = Role.ADMIN

    class InputSerializer(serializers.Serializer):
        role = serializers.ChoiceField(choices=Role.choices)

    def _get(self, pk: int) -> WorkspaceMembership:
        return object_get_for_workspace(WorkspaceMembership.objects.select_related("user"), workspace=self.workspace, pk=pk)

    @extend_schema(responses=MemberOutputSerializer, summary="One member (admin)")
    def get(self, request: Request, workspace_slug: str, pk: int) -> Response:
        return Response(MemberOutputSerializer(self._get(pk)).data)

    @extend_schema(request=InputSerializer, responses=MemberOutputSerializer, summary="Change a member's role (admin)")
    def patch(self, request: Request, workspace_slug: str, pk: int) -> Response:
        membership = self._get(pk)
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        membership = services.membership_update(membership=membership, role=data.validated_data["role"], actor=request.user)
        return Response(MemberOutputSerializer(membership).data)

    @extend_schema(responses={204: None}, summary="Remove a member (admin); not the last admin")
    def delete(self, request: Request, workspace_slug: str, pk: int) -> Response:
        membership = self._get(pk)
        services.membership_remove(membership=membership, actor=request.user)
        return Response(status=status.HTTP_204_NO_CONTENT)

"""Tenancy API: me, workspaces, members."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from workspaces import selectors, services
from workspaces.access import object_get_for_workspace
from workspaces.api.base import WorkspaceApiView
from workspaces.models import Role, WorkspaceMembership

User = get_user_model()


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
        user = request.user
        memberships = [_workspace_out(m) for m in selectors.memberships_for_user(user=user)]
        return Response({"id": user.pk, "username": user.username, "email": user.email, "memberships": memberships})


class WorkspaceListApi(APIView):
    @extend_schema(responses=WorkspaceOutputSerializer(many=True), summary="Workspaces the user belongs to")
    def get(self, request: Request) -> Response:
        return Response([_workspace_out(m) for m in selectors.memberships_for_user(user=request.user)])


class WorkspaceDetailApi(WorkspaceApiView):
    class OutputSerializer(WorkspaceOutputSerializer):
        member_count = serializers.IntegerField()

    @extend_schema(responses=OutputSerializer, summary="One workspace")
    def get(self, request: Request, workspace_slug: str) -> Response:
        data = _workspace_out(self.membership)
        data["member_count"] = self.workspace.memberships.count()
        return Response(data)


class MemberOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    username = serializers.CharField(source="user.username")
    email = serializers.CharField(source="user.email")
    role = serializers.CharField()
    created_at = serializers.DateTimeField()


class MemberListApi(WorkspaceApiView):
    read_role = Role.ADMIN
    write_role = Role.ADMIN

    class InputSerializer(serializers.Serializer):
        username = serializers.CharField(max_length=150)
        email = serializers.EmailField(required=False, allow_blank=True)
        role = serializers.ChoiceField(choices=Role.choices)

    @extend_schema(responses=MemberOutputSerializer(many=True), summary="List members (admin)")
    def get(self, request: Request, workspace_slug: str) -> Response:
        return self.paginate(request, selectors.members_of(workspace=self.workspace), MemberOutputSerializer)

    @extend_schema(
        request=InputSerializer, responses={201: MemberOutputSerializer}, summary="Add a member (admin); creates the user if missing"
    )
    def post(self, request: Request, workspace_slug: str) -> Response:
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        user, password = services.user_get_or_create(username=data.validated_data["username"], email=data.validated_data.get("email", ""))
        membership = services.membership_add(workspace=self.workspace, user=user, role=data.validated_data["role"], actor=request.user)
        body = dict(MemberOutputSerializer(membership).data)
        if password:
            body["generated_password"] = password
        return Response(body, status=status.HTTP_201_CREATED)


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

"""Tenancy API: me, workspaces, members."""

from __future__ import annotations

from typing import cast
from urllib.parse import urlencode

from django.contrib.auth.models import User
from django.db.models import QuerySet
from django.shortcuts import get_object_or_404
from django.urls import reverse
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from core.api import Pagination, StrictCharField
from workspaces import selectors, services
from workspaces.access import object_get_for_workspace, workspace_get_for_user
from workspaces.api.base import WorkspaceApiView
from workspaces.models import ApiToken, Invitation, Role, TokenScope, Workspace, WorkspaceMembership
from workspaces.permissions import token_of


class WorkspaceOutputSerializer(serializers.Serializer):
    slug = serializers.CharField()
    name = serializers.CharField()
    role = serializers.CharField()


def _workspace_out(membership: WorkspaceMembership) -> dict:
    return {"slug": membership.workspace.slug, "name": membership.workspace.name, "role": membership.role}


def _memberships(request: Request) -> QuerySet[WorkspaceMembership]:
    """The user's memberships; for a token limited to one workspace, that one only."""
    memberships = selectors.memberships_for_user(user=request.user)
    token = token_of(request)
    if token is not None and token.workspace_id is not None:
        memberships = memberships.filter(workspace_id=token.workspace_id)
    return memberships


class MeApi(APIView):
    class OutputSerializer(serializers.Serializer):
        id = serializers.IntegerField()
        username = serializers.CharField()
        email = serializers.CharField()
        memberships = WorkspaceOutputSerializer(many=True)

    @extend_schema(responses=OutputSerializer, summary="The authenticated user and their workspaces")
    def get(self, request: Request) -> Response:
        user = cast(User, request.user)  # IsAuthenticated (the default permission) ran first
        memberships = [_workspace_out(m) for m in _memberships(request)]
        return Response({"id": user.pk, "username": user.username, "email": user.email, "memberships": memberships})


class WorkspaceListApi(APIView):
    pagination_class = Pagination

    @extend_schema(responses=WorkspaceOutputSerializer(many=True), summary="Workspaces the user belongs to")
    def get(self, request: Request) -> Response:
        paginator = Pagination()
        page = paginator.paginate_queryset(_memberships(request), request, view=self)
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


# -- API tokens (the user's own) -------------------------------------------------------------


class TokenOutputSerializer(serializers.Serializer):
    """A token as its owner sees it: never its value (shown once, at creation)."""

    id = serializers.IntegerField()
    name = serializers.CharField()
    prefix = serializers.CharField()
    scope = serializers.ChoiceField(choices=TokenScope.choices)
    workspace = serializers.CharField(
        source="workspace.slug",
        allow_null=True,
        read_only=True,
        help_text="The one workspace it works in (null: every workspace of yours).",
    )
    created_at = serializers.DateTimeField()
    last_used_at = serializers.DateTimeField(allow_null=True)
    expires_at = serializers.DateTimeField(allow_null=True)
    revoked_at = serializers.DateTimeField(allow_null=True)


class TokenListApi(APIView):
    pagination_class = Pagination

    class InputSerializer(serializers.Serializer):
        name = serializers.CharField(max_length=100)
        scope = serializers.ChoiceField(choices=TokenScope.choices, default=TokenScope.ADMIN)
        workspace = serializers.SlugField(required=False, allow_null=True, help_text="Limit the token to this workspace (its slug).")
        expires_at = serializers.DateTimeField(required=False, allow_null=True)

    class CreatedOutputSerializer(TokenOutputSerializer):
        token = serializers.CharField(help_text="The token's value: shown this once, never again.")

    @extend_schema(responses=TokenOutputSerializer(many=True), summary="Your API tokens (never their values)")
    def get(self, request: Request) -> Response:
        tokens = selectors.api_tokens_for_user(user=request.user)
        paginator = Pagination()
        page = paginator.paginate_queryset(tokens, request, view=self)
        return paginator.get_paginated_response(TokenOutputSerializer(page, many=True).data)

    @extend_schema(
        request=InputSerializer,
        responses={201: CreatedOutputSerializer, 404: OpenApiResponse(description="No workspace of yours has this slug.")},
        summary="Create an API token, optionally limited to one workspace and a scope (read, run, admin)",
    )
    def post(self, request: Request) -> Response:
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        values = data.validated_data
        workspace: Workspace | None = None
        if values.get("workspace"):
            workspace, _ = workspace_get_for_user(user=request.user, workspace_slug=values["workspace"])
        token, raw = services.api_token_create(
            user=request.user,
            name=values["name"],
            expires_at=values.get("expires_at"),
            workspace=workspace,
            scope=values["scope"],
            creator=token_of(request),
        )
        body = dict(TokenOutputSerializer(token).data, token=raw)
        return Response(body, status=status.HTTP_201_CREATED)


class TokenDetailApi(APIView):
    @extend_schema(request=None, responses=TokenOutputSerializer, summary="Revoke one of your API tokens")
    def delete(self, request: Request, pk: int) -> Response:
        token = get_object_or_404(ApiToken.objects.select_related("workspace"), pk=pk, user=request.user)
        return Response(TokenOutputSerializer(services.api_token_revoke(token=token)).data)


# -- invitations -----------------------------------------------------------------------------


class InvitationOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    email = serializers.EmailField()
    role = serializers.CharField()
    status = serializers.CharField()
    created_at = serializers.DateTimeField()
    expires_at = serializers.DateTimeField()
    invited_by = serializers.CharField(source="invited_by.username", allow_null=True, default=None)


class InvitationListApi(WorkspaceApiView):
    read_role = Role.ADMIN
    write_role = Role.ADMIN

    class InputSerializer(serializers.Serializer):
        email = serializers.EmailField()
        role = serializers.ChoiceField(choices=Role.choices, default=Role.MEMBER)
        days = serializers.IntegerField(min_value=1, max_value=30, default=7, help_text="Days before the invitation expires.")

    class CreatedOutputSerializer(InvitationOutputSerializer):
        token = serializers.CharField(help_text="The invitation's token: shown this once; send it (or accept_url) to the invited person.")
        accept_url = serializers.CharField()

    @extend_schema(responses=InvitationOutputSerializer(many=True), summary="Invitations of the workspace (admin)")
    def get(self, request: Request, workspace_slug: str) -> Response:
        return self.paginate(request, selectors.invitations_of(workspace=self.workspace), InvitationOutputSerializer)

    @extend_schema(
        request=InputSerializer,
        responses={201: CreatedOutputSerializer},
        summary="Invite someone by email (admin); they accept signed in with that email",
    )
    def post(self, request: Request, workspace_slug: str) -> Response:
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        invitation, raw = services.invitation_create(workspace=self.workspace, actor=request.user, **data.validated_data)
        accept_url = request.build_absolute_uri(reverse("workspaces:invitation_accept") + "?" + urlencode({"token": raw}))
        body = dict(InvitationOutputSerializer(invitation).data, token=raw, accept_url=accept_url)
        return Response(body, status=status.HTTP_201_CREATED)


class InvitationDetailApi(WorkspaceApiView):
    read_role = Role.ADMIN
    write_role = Role.ADMIN

    @extend_schema(request=None, responses=InvitationOutputSerializer, summary="Revoke an invitation (admin)")
    def delete(self, request: Request, workspace_slug: str, pk: int) -> Response:
        invitation = object_get_for_workspace(Invitation.objects.select_related("workspace"), workspace=self.workspace, pk=pk)
        return Response(InvitationOutputSerializer(services.invitation_revoke(invitation=invitation, actor=request.user)).data)


class InvitationAcceptApi(APIView):
    class InputSerializer(serializers.Serializer):
        token = serializers.CharField(max_length=200)

    @extend_schema(
        request=InputSerializer,
        responses={201: WorkspaceOutputSerializer, 404: OpenApiResponse(description="No invitation has this token.")},
        summary="Accept an invitation as the signed-in user (whose email it was sent to)",
    )
    def post(self, request: Request) -> Response:
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        membership = services.invitation_accept(token=data.validated_data["token"], user=request.user)
        return Response(_workspace_out(membership), status=status.HTTP_201_CREATED)

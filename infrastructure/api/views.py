"""Infrastructure API: provider accounts, runtime profiles, deployments, tool resources, primitives.

Per collection: ``<Entity>ListApi`` (GET list, POST create), ``<Entity>DetailApi`` (GET, PATCH)
and ``<Entity>ArchiveApi`` (POST). Every id goes through ``object_get_for_workspace`` (404 for
another workspace's object).
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_field
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from infrastructure import selectors, services
from infrastructure.api.serializers import (
    DeploymentOutputSerializer,
    PrimitiveOutputSerializer,
    ProviderAccountOutputSerializer,
    RuntimeProfileOutputSerializer,
    ToolResourceOutputSerializer,
)
from infrastructure.models import AgentDeployment, ExecutionTarget, ProviderAccount, ProviderKey, RuntimeProfile, ToolResource
from workspaces.access import object_get_for_workspace
from workspaces.api.base import WorkspaceApiView
from workspaces.models import Role

INCLUDE_ARCHIVED = OpenApiParameter("include_archived", bool, description="Also list archived objects")


def _include_archived(request: Request) -> bool:
    return request.query_params.get("include_archived", "").lower() in ("1", "true", "yes")


# ------------------------------------------------------------------------------ provider accounts
def _limit_field(help_text: str) -> serializers.IntegerField:
    return serializers.IntegerField(required=False, allow_null=True, min_value=1, max_value=2_147_483_647, help_text=help_text)


class _ProviderLimitFields(serializers.Serializer):
    """The account's limits, shared by every worker (docs/provider-limits.md); null = no limit."""

    max_concurrent_calls = _limit_field("Model calls in flight at once, across all workers; null = no limit")
    requests_per_minute = _limit_field("Model calls started in any 60 seconds; null = no limit")
    tokens_per_minute = _limit_field("Input + output tokens in any 60 seconds; null = no limit")


class ProviderAccountListApi(WorkspaceApiView):
    write_role = Role.ADMIN

    class InputSerializer(_ProviderLimitFields):
        name = serializers.CharField(max_length=200)
        provider_key = serializers.ChoiceField(choices=ProviderKey.choices)
        credential_reference = serializers.CharField(required=False, allow_blank=True, max_length=200)
        api_key = serializers.CharField(
            required=False, allow_blank=True, write_only=True, help_text="Stored as a new workspace secret; never returned"
        )
        base_url = serializers.CharField(required=False, allow_blank=True, max_length=500)

    @extend_schema(parameters=[INCLUDE_ARCHIVED], responses=ProviderAccountOutputSerializer(many=True), summary="List provider accounts")
    def get(self, request: Request, workspace_slug: str) -> Response:
        accounts = selectors.provider_account_list(workspace=self.workspace, include_archived=_include_archived(request))
        return self.paginate(request, accounts, ProviderAccountOutputSerializer)

    @extend_schema(request=InputSerializer, responses={201: ProviderAccountOutputSerializer}, summary="Create a provider account (admin)")
    def post(self, request: Request, workspace_slug: str) -> Response:
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        account = services.provider_account_create(workspace=self.workspace, actor=request.user, **data.validated_data)
        return Response(ProviderAccountOutputSerializer(account).data, status=status.HTTP_201_CREATED)


class ProviderAccountDetailApi(WorkspaceApiView):
    write_role = Role.ADMIN

    class InputSerializer(_ProviderLimitFields):
        name = serializers.CharField(max_length=200, required=False)
        provider_key = serializers.ChoiceField(choices=ProviderKey.choices, required=False)
        credential_reference = serializers.CharField(required=False, allow_blank=True, max_length=200)
        api_key = serializers.CharField(required=False, allow_blank=True, write_only=True)
        base_url = serializers.CharField(required=False, allow_blank=True, max_length=500)
        status = serializers.ChoiceField(choices=ProviderAccount.Status.choices, required=False)

    @extend_schema(responses=ProviderAccountOutputSerializer, summary="One provider account")
    def get(self, request: Request, workspace_slug: str, pk: int) -> Response:
        account = object_get_for_workspace(ProviderAccount.objects, workspace=self.workspace, pk=pk)
        return Response(ProviderAccountOutputSerializer(account).data)

    @extend_schema(request=InputSerializer, responses=ProviderAccountOutputSerializer, summary="Change a provider account (admin)")
    def patch(self, request: Request, workspace_slug: str, pk: int) -> Response:
        account = object_get_for_workspace(ProviderAccount.objects, workspace=self.workspace, pk=pk)
        data = self.InputSerializer(data=request.data, partial=True)
        data.is_valid(raise_exception=True)
        account = services.provider_account_update(account=account, actor=request.user, **data.validated_data)
        return Response(ProviderAccountOutputSerializer(account).data)


class ProviderAccountArchiveApi(WorkspaceApiView):
    write_role = Role.ADMIN

    @extend_schema(request=None, responses=ProviderAccountOutputSerializer, summary="Archive a provider account (admin)")
    def post(self, request: Request, workspace_slug: str, pk: int) -> Response:
        account = object_get_for_workspace(ProviderAccount.objects.select_related("workspace"), workspace=self.workspace, pk=pk)
        return Response(ProviderAccountOutputSerializer(services.provider_account_archive(account=account, actor=request.user)).data)


class ProviderAccountTestConnectionApi(WorkspaceApiView):
    write_role = Role.ADMIN

    class OutputSerializer(serializers.Serializer):
        ok = serializers.BooleanField()
        message = serializers.CharField()
        models = serializers.ListField(child=serializers.CharField())

    @extend_schema(request=None, responses=OutputSerializer, summary="Test a provider account by listing its models (admin)")
    def post(self, request: Request, workspace_slug: str, pk: int) -> Response:
        account = object_get_for_workspace(ProviderAccount.objects.select_related("workspace"), workspace=self.workspace, pk=pk)
        result = services.provider_account_test_connection(account=account, actor=request.user)
        return Response({"ok": result.ok, "message": result.message, "models": list(result.models)})


# ------------------------------------------------------------------------------ runtime profiles
class _RuntimeProfileFields(serializers.Serializer):
    name = serializers.CharField(max_length=200)
    execution_target = serializers.ChoiceField(choices=ExecutionTarget.choices)
    max_iterations = serializers.IntegerField(required=False, min_value=1)
    max_tool_calls = serializers.IntegerField(required=False, min_value=0, help_text="0 = unlimited")
    step_timeout_seconds = serializers.IntegerField(required=False, min_value=1)
    run_timeout_seconds = serializers.IntegerField(required=False, min_value=1)
    max_in_flight_cases = serializers.IntegerField(required=False, min_value=1)
    allow_shell = serializers.BooleanField(required=False, allow_null=True)
    allow_network = serializers.BooleanField(required=False, allow_null=True)
    max_workspace_bytes = serializers.IntegerField(required=False, allow_null=True, min_value=1)


class RuntimeProfileListApi(WorkspaceApiView):
    write_role = Role.MEMBER

    class InputSerializer(_RuntimeProfileFields):
        pass

    @extend_schema(parameters=[INCLUDE_ARCHIVED], responses=RuntimeProfileOutputSerializer(many=True), summary="List runtime profiles")
    def get(self, request: Request, workspace_slug: str) -> Response:
        profiles = selectors.runtime_profile_list(workspace=self.workspace, include_archived=_include_archived(request))
        return self.paginate(request, profiles, RuntimeProfileOutputSerializer)

    @extend_schema(request=InputSerializer, responses={201: RuntimeProfileOutputSerializer}, summary="Create a runtime profile (member)")
    def post(self, request: Request, workspace_slug: str) -> Response:
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        profile = services.runtime_profile_create(workspace=self.workspace, actor=request.user, **data.validated_data)
        return Response(RuntimeProfileOutputSerializer(profile).data, status=status.HTTP_201_CREATED)


class RuntimeProfileDetailApi(WorkspaceApiView):
    write_role = Role.MEMBER

    class InputSerializer(_RuntimeProfileFields):
        pass

    @extend_schema(responses=RuntimeProfileOutputSerializer, summary="One runtime profile")
    def get(self, request: Request, workspace_slug: str, pk: int) -> Response:
        return Response(
            RuntimeProfileOutputSerializer(object_get_for_workspace(RuntimeProfile.objects, workspace=self.workspace, pk=pk)).data
        )

    @extend_schema(request=InputSerializer, responses=RuntimeProfileOutputSerializer, summary="Change a runtime profile (member)")
    def patch(self, request: Request, workspace_slug: str, pk: int) -> Response:
        profile = object_get_for_workspace(RuntimeProfile.objects, workspace=self.workspace, pk=pk)
        data = self.InputSerializer(data=request.data, partial=True)
        data.is_valid(raise_exception=True)
        profile = services.runtime_profile_update(profile=profile, actor=request.user, **data.validated_data)
        return Response(RuntimeProfileOutputSerializer(profile).data)


class RuntimeProfileArchiveApi(WorkspaceApiView):
    write_role = Role.MEMBER

    @extend_schema(request=None, responses=RuntimeProfileOutputSerializer, summary="Archive a runtime profile (member)")
    def post(self, request: Request, workspace_slug: str, pk: int) -> Response:
        profile = object_get_for_workspace(RuntimeProfile.objects.select_related("workspace"), workspace=self.workspace, pk=pk)
        return Response(RuntimeProfileOutputSerializer(services.runtime_profile_archive(profile=profile, actor=request.user)).data)


# ------------------------------------------------------------------------------ deployments
class _DeploymentFields(serializers.Serializer):
    name = serializers.CharField(max_length=200)
    provider_account_id = serializers.IntegerField()
    model = serializers.CharField(max_length=200)
    runtime_profile_id = serializers.IntegerField()
    system_prompt = serializers.CharField(required=False, allow_blank=True, trim_whitespace=False)
    output_schema = serializers.JSONField(required=False, allow_null=True)
    deployment_config = serializers.JSONField(required=False, allow_null=True)
    is_default_judge = serializers.BooleanField(
        required=False, help_text="Make this the workspace's default judge deployment (unsets the previous one)."
    )
    endpoint_url = serializers.CharField(
        max_length=500,
        required=False,
        allow_blank=True,
        help_text="Hosted external runtime profiles only: the HTTPS endpoint the worker posts each case to.",
    )


class _DeploymentInput:
    workspace: Any

    def _resolve_refs(self, data: dict[str, Any]) -> dict[str, Any]:
        """Turn the ids into this workspace's objects; another workspace's id is 404."""
        data = dict(data)
        if "provider_account_id" in data:
            data["provider_account"] = object_get_for_workspace(
                ProviderAccount.objects, workspace=self.workspace, pk=data.pop("provider_account_id")
            )
        if "runtime_profile_id" in data:
            data["runtime_profile"] = object_get_for_workspace(
                RuntimeProfile.objects, workspace=self.workspace, pk=data.pop("runtime_profile_id")
            )
        return data


class DeploymentListApi(_DeploymentInput, WorkspaceApiView):
    write_role = Role.MEMBER

    class InputSerializer(_DeploymentFields):
        pass

    @extend_schema(parameters=[INCLUDE_ARCHIVED], responses=DeploymentOutputSerializer(many=True), summary="List agent deployments")
    def get(self, request: Request, workspace_slug: str) -> Response:
        deployments = selectors.deployment_list(workspace=self.workspace, include_archived=_include_archived(request))
        return self.paginate(request, deployments, DeploymentOutputSerializer)

    @extend_schema(request=InputSerializer, responses={201: DeploymentOutputSerializer}, summary="Create an agent deployment (member)")
    def post(self, request: Request, workspace_slug: str) -> Response:
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        deployment = services.deployment_create(workspace=self.workspace, actor=request.user, **self._resolve_refs(data.validated_data))
        return Response(DeploymentOutputSerializer(deployment).data, status=status.HTTP_201_CREATED)


class DeploymentDetailApi(_DeploymentInput, WorkspaceApiView):
    write_role = Role.MEMBER

    class InputSerializer(_DeploymentFields):
        pass

    def _get(self, pk: int) -> AgentDeployment:
        return object_get_for_workspace(
            AgentDeployment.objects.select_related("provider_account", "runtime_profile"), workspace=self.workspace, pk=pk
        )

    @extend_schema(responses=DeploymentOutputSerializer, summary="One agent deployment")
    def get(self, request: Request, workspace_slug: str, pk: int) -> Response:
        return Response(DeploymentOutputSerializer(self._get(pk)).data)

    @extend_schema(request=InputSerializer, responses=DeploymentOutputSerializer, summary="Change an agent deployment (member)")
    def patch(self, request: Request, workspace_slug: str, pk: int) -> Response:
        deployment = self._get(pk)
        data = self.InputSerializer(data=request.data, partial=True)
        data.is_valid(raise_exception=True)
        deployment = services.deployment_update(deployment=deployment, actor=request.user, **self._resolve_refs(data.validated_data))
        return Response(DeploymentOutputSerializer(deployment).data)


class DeploymentArchiveApi(WorkspaceApiView):
    write_role = Role.MEMBER

    @extend_schema(request=None, responses=DeploymentOutputSerializer, summary="Archive an agent deployment (member)")
    def post(self, request: Request, workspace_slug: str, pk: int) -> Response:
        deployment = object_get_for_workspace(AgentDeployment.objects.select_related("workspace"), workspace=self.workspace, pk=pk)
        return Response(DeploymentOutputSerializer(services.deployment_archive(deployment=deployment, actor=request.user)).data)


# ------------------------------------------------------------------------------ tool resources
@extend_schema_field({"type": "string", "description": "One of: " + ", ".join(ToolResource.Lifecycle.values)})
class _ToolLifecycleField(serializers.ChoiceField):
    """Documented as a string: an enum named ``lifecycle_status`` would collide with the packs' one in the schema."""


class _ToolResourceFields(serializers.Serializer):
    name = serializers.CharField(max_length=200)
    slug = serializers.SlugField(max_length=100, required=False, allow_blank=True)
    tool_kind = serializers.ChoiceField(choices=ToolResource.ToolKind.choices)
    capability_key = serializers.CharField(max_length=100)
    definition = serializers.JSONField(required=False, allow_null=True)
    lifecycle_status = _ToolLifecycleField(choices=ToolResource.Lifecycle.choices, required=False)


class ToolResourceListApi(WorkspaceApiView):
    write_role = Role.ADMIN

    class InputSerializer(_ToolResourceFields):
        pass

    @extend_schema(
        parameters=[INCLUDE_ARCHIVED], responses=ToolResourceOutputSerializer(many=True), summary="List workspace tool resources"
    )
    def get(self, request: Request, workspace_slug: str) -> Response:
        tools = selectors.tool_resource_list(workspace=self.workspace, include_archived=_include_archived(request))
        return self.paginate(request, tools, ToolResourceOutputSerializer)

    @extend_schema(request=InputSerializer, responses={201: ToolResourceOutputSerializer}, summary="Create a tool resource (admin)")
    def post(self, request: Request, workspace_slug: str) -> Response:
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        tool = services.tool_resource_create(workspace=self.workspace, actor=request.user, **data.validated_data)
        return Response(ToolResourceOutputSerializer(tool).data, status=status.HTTP_201_CREATED)


class ToolResourceDetailApi(WorkspaceApiView):
    write_role = Role.ADMIN

    class InputSerializer(_ToolResourceFields):
        pass

    @extend_schema(responses=ToolResourceOutputSerializer, summary="One tool resource")
    def get(self, request: Request, workspace_slug: str, pk: int) -> Response:
        return Response(ToolResourceOutputSerializer(object_get_for_workspace(ToolResource.objects, workspace=self.workspace, pk=pk)).data)

    @extend_schema(request=InputSerializer, responses=ToolResourceOutputSerializer, summary="Change a tool resource (admin)")
    def patch(self, request: Request, workspace_slug: str, pk: int) -> Response:
        tool = object_get_for_workspace(ToolResource.objects, workspace=self.workspace, pk=pk)
        data = self.InputSerializer(data=request.data, partial=True)
        data.is_valid(raise_exception=True)
        tool = services.tool_resource_update(tool=tool, actor=request.user, **data.validated_data)
        return Response(ToolResourceOutputSerializer(tool).data)


class ToolResourceArchiveApi(WorkspaceApiView):
    write_role = Role.ADMIN

    @extend_schema(request=None, responses=ToolResourceOutputSerializer, summary="Archive a tool resource (admin)")
    def post(self, request: Request, workspace_slug: str, pk: int) -> Response:
        tool = object_get_for_workspace(ToolResource.objects.select_related("workspace"), workspace=self.workspace, pk=pk)
        return Response(ToolResourceOutputSerializer(services.tool_resource_archive(tool=tool, actor=request.user)).data)


# ------------------------------------------------------------------------------ primitives (not workspace-scoped)
class PrimitiveListApi(APIView):
    @extend_schema(responses=PrimitiveOutputSerializer(many=True), summary="The engine's primitive catalogue (read-only)")
    def get(self, request: Request) -> Response:
        return Response(PrimitiveOutputSerializer(selectors.primitive_catalogue(), many=True).data)

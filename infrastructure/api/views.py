"""Infrastructure API: provider accounts, runtime profiles, deployments, tool resources, primitives.

The collections follow one pattern (``infrastructure/api/crud.py``): each view states its entity,
its output serializer and its nested ``InputSerializer``.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema, extend_schema_field
from rest_framework import serializers
from rest_framework.permissions import IsAdminUser, IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from infrastructure import crud, selectors, services
from infrastructure.api.crud import EntityApi, EntityArchiveApi, EntityDetailApi, EntityListApi
from infrastructure.api.serializers import (
    DeploymentOutputSerializer,
    PrimitiveOutputSerializer,
    ProviderAccountOutputSerializer,
    RuntimeProfileOutputSerializer,
    SandboxTemplateOutputSerializer,
    ToolResourceOutputSerializer,
)
from infrastructure.models import ExecutionTarget, ProviderAccount, ProviderKey, RuntimeProfile, ToolResource
from workspaces.access import object_get_for_workspace
from workspaces.api.base import WorkspaceApiView
from workspaces.models import Role
from workspaces.permissions import TokenLimits


# ------------------------------------------------------------------------------ provider accounts
def _limit_field(help_text: str) -> serializers.IntegerField:
    return serializers.IntegerField(required=False, allow_null=True, min_value=1, max_value=2_147_483_647, help_text=help_text)


class _ProviderLimitFields(serializers.Serializer):
    """The account's limits, shared by every worker (docs/provider-limits.md); null = no limit."""

    max_concurrent_calls = _limit_field("Model calls in flight at once, across all workers; null = no limit")
    requests_per_minute = _limit_field("Model calls started in any 60 seconds; null = no limit")
    tokens_per_minute = _limit_field("Input + output tokens in any 60 seconds; null = no limit")


class ProviderAccountListApi(EntityListApi):
    entity = crud.PROVIDER_ACCOUNTS
    OutputSerializer = ProviderAccountOutputSerializer

    class InputSerializer(_ProviderLimitFields):
        name = serializers.CharField(max_length=200)
        provider_key = serializers.ChoiceField(choices=ProviderKey.choices)
        credential_reference = serializers.CharField(required=False, allow_blank=True, max_length=200)
        api_key = serializers.CharField(
            required=False, allow_blank=True, write_only=True, help_text="Stored as a new workspace secret; never returned"
        )
        base_url = serializers.CharField(required=False, allow_blank=True, max_length=500)


class ProviderAccountDetailApi(EntityDetailApi):
    entity = crud.PROVIDER_ACCOUNTS
    OutputSerializer = ProviderAccountOutputSerializer

    class InputSerializer(_ProviderLimitFields):
        name = serializers.CharField(max_length=200, required=False)
        provider_key = serializers.ChoiceField(choices=ProviderKey.choices, required=False)
        credential_reference = serializers.CharField(required=False, allow_blank=True, max_length=200)
        api_key = serializers.CharField(required=False, allow_blank=True, write_only=True)
        base_url = serializers.CharField(required=False, allow_blank=True, max_length=500)
        status = serializers.ChoiceField(choices=ProviderAccount.Status.choices, required=False)


class ProviderAccountArchiveApi(EntityArchiveApi):
    entity = crud.PROVIDER_ACCOUNTS
    OutputSerializer = ProviderAccountOutputSerializer


class ProviderAccountTestConnectionApi(WorkspaceApiView):
    write_role = Role.ADMIN

    class OutputSerializer(serializers.Serializer):
        ok = serializers.BooleanField()
        message = serializers.CharField()
        models = serializers.ListField(child=serializers.CharField())

    @extend_schema(request=None, responses=OutputSerializer, summary="Test a provider account by listing its models (admin)")
    def post(self, request: Request, workspace_slug: str, pk: int) -> Response:
        account = crud.PROVIDER_ACCOUNTS.get(workspace=self.workspace, pk=pk)
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


class RuntimeProfileListApi(EntityListApi):
    entity = crud.RUNTIME_PROFILES
    OutputSerializer = RuntimeProfileOutputSerializer

    class InputSerializer(_RuntimeProfileFields):
        pass


class RuntimeProfileDetailApi(EntityDetailApi):
    entity = crud.RUNTIME_PROFILES
    OutputSerializer = RuntimeProfileOutputSerializer

    class InputSerializer(_RuntimeProfileFields):
        pass


class RuntimeProfileArchiveApi(EntityArchiveApi):
    entity = crud.RUNTIME_PROFILES
    OutputSerializer = RuntimeProfileOutputSerializer


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


class _DeploymentReferences(EntityApi):
    """The API names a deployment's account and profile by id (``…_id``); the services take the objects."""

    def service_fields(self, data: dict[str, Any]) -> dict[str, Any]:
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


class DeploymentListApi(_DeploymentReferences, EntityListApi):
    entity = crud.DEPLOYMENTS
    OutputSerializer = DeploymentOutputSerializer

    class InputSerializer(_DeploymentFields):
        pass


class DeploymentDetailApi(_DeploymentReferences, EntityDetailApi):
    entity = crud.DEPLOYMENTS
    OutputSerializer = DeploymentOutputSerializer

    class InputSerializer(_DeploymentFields):
        pass


class DeploymentArchiveApi(EntityArchiveApi):
    entity = crud.DEPLOYMENTS
    OutputSerializer = DeploymentOutputSerializer


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


class ToolResourceListApi(EntityListApi):
    entity = crud.TOOL_RESOURCES
    OutputSerializer = ToolResourceOutputSerializer

    class InputSerializer(_ToolResourceFields):
        pass


class ToolResourceDetailApi(EntityDetailApi):
    entity = crud.TOOL_RESOURCES
    OutputSerializer = ToolResourceOutputSerializer

    class InputSerializer(_ToolResourceFields):
        pass


class ToolResourceArchiveApi(EntityArchiveApi):
    entity = crud.TOOL_RESOURCES
    OutputSerializer = ToolResourceOutputSerializer


# ------------------------------------------------------------------------------ primitives (not workspace-scoped)
class PrimitiveListApi(APIView):
    @extend_schema(responses=PrimitiveOutputSerializer(many=True), summary="The engine's primitive catalogue (read-only)")
    def get(self, request: Request) -> Response:
        return Response(PrimitiveOutputSerializer(selectors.primitive_catalogue(), many=True).data)


# ------------------------------------------------------------------------------ sandbox templates (installation-wide)
class _OperatorWrites(APIView):
    """Anyone signed in reads; only operators (staff users) write: templates are the installation's."""

    def get_permissions(self) -> list[Any]:
        if self.request.method in ("GET", "HEAD", "OPTIONS"):
            return [IsAuthenticated(), TokenLimits()]
        return [IsAuthenticated(), IsAdminUser(), TokenLimits()]


class SandboxTemplateListApi(_OperatorWrites):
    class InputSerializer(serializers.Serializer):
        template_id = serializers.SlugField(max_length=100)
        name = serializers.CharField(max_length=200)
        packages = serializers.ListField(child=serializers.CharField(max_length=100), required=False, default=list)
        read_only_paths = serializers.ListField(child=serializers.CharField(max_length=500), required=False, default=list)

    @extend_schema(responses=SandboxTemplateOutputSerializer(many=True), summary="Sandbox templates packs may name")
    def get(self, request: Request) -> Response:
        return Response(SandboxTemplateOutputSerializer(selectors.sandbox_template_list(), many=True).data)

    @extend_schema(request=InputSerializer, responses={201: SandboxTemplateOutputSerializer}, summary="Add a sandbox template (staff)")
    def post(self, request: Request) -> Response:
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        template = services.sandbox_template_create(actor=request.user, **data.validated_data)
        return Response(SandboxTemplateOutputSerializer(template).data, status=201)


class SandboxTemplateDetailApi(_OperatorWrites):
    class InputSerializer(serializers.Serializer):
        name = serializers.CharField(max_length=200, required=False)
        packages = serializers.ListField(child=serializers.CharField(max_length=100), required=False)
        read_only_paths = serializers.ListField(child=serializers.CharField(max_length=500), required=False)

    @extend_schema(responses=SandboxTemplateOutputSerializer, summary="One sandbox template")
    def get(self, request: Request, template_id: str) -> Response:
        return Response(SandboxTemplateOutputSerializer(selectors.sandbox_template_get(template_id=template_id)).data)

    @extend_schema(request=InputSerializer, responses=SandboxTemplateOutputSerializer, summary="Change a sandbox template (staff)")
    def patch(self, request: Request, template_id: str) -> Response:
        data = self.InputSerializer(data=request.data, partial=True)
        data.is_valid(raise_exception=True)
        template = selectors.sandbox_template_get(template_id=template_id)
        template = services.sandbox_template_update(template=template, actor=request.user, **data.validated_data)
        return Response(SandboxTemplateOutputSerializer(template).data)

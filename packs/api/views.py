"""Packs API: validate, publish, and read packs, versions, input sets and cases."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiExample, OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from artifacts.selectors import bundle_artifact_for
from core.api import ApiError
from core.parsers import JSONParser
from packs import selectors, services
from packs.api.parsers import ApplicationYamlTextParser, XYamlTextParser, YamlTextParser, too_large
from packs.api.serializers import (
    CaseOutputSerializer,
    ErrorItemSerializer,
    InputSetOutputSerializer,
    PackOutputSerializer,
    PackVersionDetailOutputSerializer,
    PackVersionOutputSerializer,
    WarningItemSerializer,
)
from packs.models import PackVersion
from workspaces.api.base import WorkspaceApiView
from workspaces.idempotency import IDEMPOTENCY_PARAMETER, idempotent

BUNDLE_PARSERS = [YamlTextParser, XYamlTextParser, ApplicationYamlTextParser, JSONParser]


class BundleInputSerializer(serializers.Serializer):
    yaml = serializers.CharField(
        trim_whitespace=False, allow_blank=True, help_text="The bundle YAML (or send it as the raw body with Content-Type: text/yaml)."
    )


class InvalidBundleOutputSerializer(serializers.Serializer):
    valid = serializers.BooleanField()
    errors = ErrorItemSerializer(many=True)  # type: ignore[assignment]  # a field named like a DRF Field attribute
    warnings = WarningItemSerializer(many=True)


def _bundle_source(request: Request) -> str:
    """The YAML from a text/yaml body or a JSON ``{"yaml": …}``; 413 above 1 MiB."""
    try:
        length = int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        length = 0
    if length > services.MAX_BUNDLE_BYTES:
        raise too_large(length)
    data = request.data
    if isinstance(data, str):
        source = data
    elif not data:
        source = ""
    else:
        serializer = BundleInputSerializer(data=data)
        serializer.is_valid(raise_exception=True)
        source = serializer.validated_data["yaml"]
    if not source:
        raise ApiError(400, "invalid_request", "request body is required")
    if len(source.encode()) > services.MAX_BUNDLE_BYTES:
        raise too_large(len(source.encode()))
    return source


class PackValidateApi(WorkspaceApiView):
    parser_classes = BUNDLE_PARSERS

    class OutputSerializer(serializers.Serializer):
        valid = serializers.BooleanField()
        manifest_checksum = serializers.CharField()
        pack_slug = serializers.CharField()
        version_number = serializers.IntegerField()
        warnings = WarningItemSerializer(many=True)

    @extend_schema(
        request={"text/yaml": {"type": "string"}, "application/json": BundleInputSerializer},
        responses={200: OutputSerializer, 400: InvalidBundleOutputSerializer, 413: OpenApiResponse(description="Body larger than 1 MiB")},
        summary="Validate a pack bundle (member); nothing is written",
        examples=[
            OpenApiExample(
                "invalid",
                response_only=True,
                status_codes=["400"],
                value={
                    "error": {"code": "challenge_pack_invalid", "message": "The pack is invalid: pack.slug is required (line 2)."},
                    "valid": False,
                    "errors": [{"field": "pack.slug", "message": "is required", "line": 2}],
                    "warnings": [],
                },
            ),
            OpenApiExample(
                "valid with a warning",
                response_only=True,
                status_codes=["200"],
                value={
                    "valid": True,
                    "manifest_checksum": "3f1c…",
                    "pack_slug": "support-triage",
                    "version_number": 1,
                    "warnings": [
                        {
                            "path": "version.tools",
                            "message": "is read as the pack's tools: tools belong at the top level of the bundle "
                            "(the reference format ignores them under version:); move them there",
                            "line": 30,
                        }
                    ],
                },
            ),
        ],
    )
    def post(self, request: Request, workspace_slug: str) -> Response:
        source = _bundle_source(request)
        result = services.bundle_validate(source)  # PackInvalid: the 400 with every error (core/api.py)
        manifest = result.manifest or {}
        return Response(
            {
                "valid": True,
                "manifest_checksum": result.checksum,
                "pack_slug": manifest["pack"]["slug"],
                "version_number": manifest["version"]["number"],
                "warnings": services.warning_dicts(result),
            }
        )


class PackPublishApi(WorkspaceApiView):
    parser_classes = BUNDLE_PARSERS

    class OutputSerializer(serializers.Serializer):
        challenge_pack_id = serializers.IntegerField(help_text="The pack (created, or the existing pack of that slug).")
        challenge_pack_version_id = serializers.IntegerField(help_text="The new immutable version.")
        evaluation_spec_id = serializers.CharField(
            help_text="The version's evaluation spec: SHA-256 of its canonical JSON, the evaluation_spec_fingerprint of its scorecards."
        )
        pack_id = serializers.IntegerField(help_text="Same as challenge_pack_id (kept for existing clients).")
        pack_version_id = serializers.IntegerField(help_text="Same as challenge_pack_version_id (kept for existing clients).")
        input_set_ids = serializers.ListField(child=serializers.IntegerField())
        pack_slug = serializers.CharField()
        version_number = serializers.IntegerField()
        manifest_checksum = serializers.CharField()
        warnings = WarningItemSerializer(many=True)
        bundle_artifact_id = serializers.UUIDField(allow_null=True, help_text="The raw YAML, stored as an artifact.")

    @extend_schema(
        request={"text/yaml": {"type": "string"}, "application/json": BundleInputSerializer},
        responses={
            201: OutputSerializer,
            400: InvalidBundleOutputSerializer,
            409: OpenApiResponse(description="challenge_pack_version_exists or challenge_pack_metadata_conflict"),
            413: OpenApiResponse(description="Body larger than 1 MiB"),
        },
        summary="Publish a pack bundle as a new immutable version (member)",
        parameters=[IDEMPOTENCY_PARAMETER],
    )
    @idempotent
    def post(self, request: Request, workspace_slug: str) -> Response:
        source = _bundle_source(request)
        version = services.pack_publish(workspace=self.workspace, user=request.user, source=source)
        body = {
            "challenge_pack_id": version.pack_id,
            "challenge_pack_version_id": version.pk,
            "evaluation_spec_id": version.evaluation_spec_id,
            "pack_id": version.pack_id,
            "pack_version_id": version.pk,
            "input_set_ids": list(version.input_sets.order_by("key").values_list("pk", flat=True)),
            "pack_slug": version.pack.slug,
            "version_number": version.number,
            "manifest_checksum": version.manifest_checksum,
            "warnings": version.warnings or [],
        }
        bundle_artifact = bundle_artifact_for(workspace=self.workspace, pack_version_id=version.pk)
        body["bundle_artifact_id"] = str(bundle_artifact.pk) if bundle_artifact else None
        return Response(body, status=status.HTTP_201_CREATED)


class PackListApi(WorkspaceApiView):
    @extend_schema(responses=PackOutputSerializer(many=True), summary="Packs of the workspace with their latest version")
    def get(self, request: Request, workspace_slug: str) -> Response:
        return self.paginate(request, selectors.pack_list(workspace=self.workspace), PackOutputSerializer)


class PackDetailApi(WorkspaceApiView):
    @extend_schema(responses=PackOutputSerializer, summary="One pack")
    def get(self, request: Request, workspace_slug: str, pk: int) -> Response:
        pack = selectors.pack_get(workspace=self.workspace, pk=pk)
        annotated = selectors.pack_list(workspace=self.workspace).get(pk=pack.pk)
        return Response(PackOutputSerializer(annotated).data)


class PackVersionListApi(WorkspaceApiView):
    class OutputSerializer(PackVersionOutputSerializer):
        challenges_count = serializers.IntegerField()
        cases_count = serializers.IntegerField()

    @extend_schema(responses=OutputSerializer(many=True), summary="Versions of a pack, newest first")
    def get(self, request: Request, workspace_slug: str, pk: int) -> Response:
        pack = selectors.pack_get(workspace=self.workspace, pk=pk)
        return self.paginate(request, selectors.pack_versions(pack=pack), self.OutputSerializer)


class PackVersionDetailApi(WorkspaceApiView):
    class InputSerializer(serializers.Serializer):
        lifecycle_status = serializers.ChoiceField(choices=PackVersion.Lifecycle.choices)

    @extend_schema(responses=PackVersionDetailOutputSerializer, summary="One pack version with its manifest")
    def get(self, request: Request, workspace_slug: str, pk: int) -> Response:
        version = selectors.pack_version_get(workspace=self.workspace, pk=pk)
        return Response(PackVersionDetailOutputSerializer(version).data)

    @extend_schema(
        request=InputSerializer,
        responses=PackVersionDetailOutputSerializer,
        summary="Change a version's lifecycle status (member); nothing else of a published version can change",
    )
    def patch(self, request: Request, workspace_slug: str, pk: int) -> Response:
        version = selectors.pack_version_get(workspace=self.workspace, pk=pk)
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        extra = sorted(set(request.data) - {"lifecycle_status"}) if isinstance(request.data, dict) else []
        if extra:
            raise ApiError(
                400, "immutable_field", f"A published version is immutable; only lifecycle_status can change (got {', '.join(extra)})."
            )
        version = services.pack_version_set_lifecycle(
            version=version, lifecycle_status=data.validated_data["lifecycle_status"], user=request.user
        )
        return Response(PackVersionDetailOutputSerializer(version).data)


class PackVersionInputSetListApi(WorkspaceApiView):
    @extend_schema(responses=InputSetOutputSerializer(many=True), summary="Input sets of a pack version (for the run picker)")
    def get(self, request: Request, workspace_slug: str, pk: int) -> Response:
        version = selectors.pack_version_get(workspace=self.workspace, pk=pk)
        return self.paginate(request, selectors.input_sets_of(version=version), InputSetOutputSerializer)


class InputSetCaseListApi(WorkspaceApiView):
    @extend_schema(responses=CaseOutputSerializer(many=True), summary="Cases of an input set, in order")
    def get(self, request: Request, workspace_slug: str, pk: int) -> Response:
        input_set = selectors.input_set_get(workspace=self.workspace, pk=pk)
        return self.paginate(request, selectors.cases_of(input_set=input_set), CaseOutputSerializer)

"""Artifacts API: upload, list, read and download files of a workspace (docs/style.md §18)."""

from __future__ import annotations

from django.http import FileResponse
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.parsers import MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response

from artifacts import selectors, services
from artifacts.api.serializers import ArtifactOutputSerializer
from artifacts.content import ContentRefused
from artifacts.downloads import download_response
from artifacts.models import ArtifactKind
from core.api import ApiError
from workspaces.api.base import WorkspaceApiView
from workspaces.idempotency import IDEMPOTENCY_PARAMETER, idempotent

# Multipart framing around the file; a body larger than the limit plus this is refused unread.
_MULTIPART_SLACK = 64 * 1024


def refused(exc: ContentRefused) -> ContentRefused:
    """The error to raise for a refused upload: ContentRefused is a DomainError that core/api.py
    maps (413 too large, 415 type not accepted). Kept for callers that still re-raise through it."""
    return exc


class ArtifactListApi(WorkspaceApiView):
    parser_classes = [MultiPartParser]

    class InputSerializer(serializers.Serializer):
        file = serializers.FileField(allow_empty_file=True, help_text="The file; its content decides the content type.")
        name = serializers.CharField(required=False, allow_blank=True, max_length=500, help_text="File name (default: the upload's).")

    @extend_schema(
        summary="Artifacts of the workspace, newest first",
        parameters=[OpenApiParameter("kind", str, enum=ArtifactKind.values, description="Only artifacts of this kind")],
        responses=ArtifactOutputSerializer(many=True),
    )
    def get(self, request: Request, workspace_slug: str) -> Response:
        kind = request.query_params.get("kind", "")
        if kind and kind not in ArtifactKind.values:
            raise ApiError(
                400, "invalid_request", f"kind must be one of {', '.join(ArtifactKind.values)}", fields={"kind": ["unknown kind"]}
            )
        return self.paginate(request, selectors.artifact_list(workspace=self.workspace, kind=kind), ArtifactOutputSerializer)

    @extend_schema(
        summary="Upload an artifact (member; multipart, field `file`)",
        request={"multipart/form-data": InputSerializer},
        responses={
            201: ArtifactOutputSerializer,
            413: OpenApiResponse(description="Larger than ARTIFACT_MAX_BYTES"),
            415: OpenApiResponse(description="Content type not accepted"),
        },
        parameters=[IDEMPOTENCY_PARAMETER],
    )
    @idempotent
    def post(self, request: Request, workspace_slug: str) -> Response:
        try:
            length = int(request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            length = 0
        limit = services.max_bytes()
        if length > limit + _MULTIPART_SLACK:
            raise ApiError(413, "payload_too_large", f"the file is larger than the limit of {limit} bytes")
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        upload = data.validated_data["file"]
        artifact = services.artifact_create(
            workspace=self.workspace, user=request.user, stream=upload, name=data.validated_data.get("name") or upload.name or ""
        )
        return Response(ArtifactOutputSerializer(artifact).data, status=status.HTTP_201_CREATED)


class ArtifactDetailApi(WorkspaceApiView):
    @extend_schema(summary="One artifact", responses=ArtifactOutputSerializer)
    def get(self, request: Request, workspace_slug: str, artifact_id: str) -> Response:
        return Response(ArtifactOutputSerializer(selectors.artifact_get(workspace=self.workspace, pk=artifact_id)).data)


class ArtifactDownloadApi(WorkspaceApiView):
    @extend_schema(
        summary="Download an artifact (always an attachment, with its sniffed content type)",
        responses={(200, "application/octet-stream"): OpenApiResponse(description="The file")},
    )
    def get(self, request: Request, workspace_slug: str, artifact_id: str) -> FileResponse:
        return download_response(selectors.artifact_get(workspace=self.workspace, pk=artifact_id))

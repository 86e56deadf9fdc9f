"""Run attachments API: list, attach an artifact, store the run's exports (docs/artifacts.md)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from artifacts.api.serializers import ArtifactOutputSerializer
from artifacts.api.views import refused
from artifacts.content import ContentRefused
from artifacts.selectors import artifact_get
from runs import lookups, selectors, services
from workspaces.api.base import WorkspaceApiView


class RunArtifactOutputSerializer(serializers.Serializer):
    artifact = ArtifactOutputSerializer()
    attached_by = serializers.CharField(source="attached_by.username", default=None, allow_null=True)
    attached_at = serializers.DateTimeField()


class RunArtifactListApi(WorkspaceApiView):
    class InputSerializer(serializers.Serializer):
        artifact_id = serializers.UUIDField(help_text="An artifact of this workspace.")

    @extend_schema(summary="Artifacts attached to a run, oldest first", responses=RunArtifactOutputSerializer(many=True))
    def get(self, request: Request, workspace_slug: str, run_id: int) -> Response:
        run = lookups.run_get(workspace=self.workspace, pk=run_id)
        return self.paginate(request, selectors.run_attachments(run=run), RunArtifactOutputSerializer)

    @extend_schema(
        summary="Attach an artifact to a run (member; idempotent: 200 when it was already attached)",
        request=InputSerializer,
        responses={201: RunArtifactOutputSerializer, 200: RunArtifactOutputSerializer},
    )
    def post(self, request: Request, workspace_slug: str, run_id: int) -> Response:
        run = lookups.run_get(workspace=self.workspace, pk=run_id)
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        artifact = artifact_get(workspace=self.workspace, pk=data.validated_data["artifact_id"])
        attachment, created = services.run_artifact_attach(run=run, artifact=artifact, user=request.user)
        return Response(RunArtifactOutputSerializer(attachment).data, status=status.HTTP_201_CREATED if created else status.HTTP_200_OK)


class RunExportsStoreApi(WorkspaceApiView):
    pagination_class = None  # answers the few attachments it just made, not a page

    @extend_schema(
        summary="Store the run's events (JSON lines) and, once scored, its scorecards as artifacts attached to it (member)",
        request=None,
        responses={201: RunArtifactOutputSerializer(many=True)},
    )
    def post(self, request: Request, workspace_slug: str, run_id: int) -> Response:
        run = lookups.run_get(workspace=self.workspace, pk=run_id)
        try:
            attachments = services.run_exports_store(run=run, user=request.user)
        except ContentRefused as exc:
            raise refused(exc) from None
        return Response(RunArtifactOutputSerializer(attachments, many=True).data, status=status.HTTP_201_CREATED)

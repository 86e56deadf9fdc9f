"""Share links API: a read-only public link to a run's report (docs/runs.md, "Share links").

Any member may list a run's links (never their tokens); making and revoking one needs the member
role, as starting a run does: a viewer may read a run but not publish it.
"""

from __future__ import annotations

from django.urls import reverse
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from runs import lookups, selectors, services
from runs.models import RunShare
from runs.services.shares import SHARE_DAYS_DEFAULT, SHARE_DAYS_MAX
from workspaces.api.base import WorkspaceApiView


class RunShareOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    created_at = serializers.DateTimeField()
    created_by = serializers.CharField(source="created_by.username", default=None, allow_null=True)
    expires_at = serializers.DateTimeField()
    revoked_at = serializers.DateTimeField(allow_null=True)
    active = serializers.BooleanField(source="is_active")
    view_count = serializers.IntegerField()
    last_viewed_at = serializers.DateTimeField(allow_null=True)


class RunShareCreatedSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    url = serializers.URLField(help_text="The public link. Shown once: only a hash of its token is kept.")
    expires_at = serializers.DateTimeField()


def share_url(request: object, raw: str) -> str:
    return request.build_absolute_uri(reverse("shared-report", args=[raw]))  # type: ignore[attr-defined]


class RunShareListApi(WorkspaceApiView):
    class InputSerializer(serializers.Serializer):
        expires_in_days = serializers.IntegerField(
            required=False, default=SHARE_DAYS_DEFAULT, min_value=1, max_value=SHARE_DAYS_MAX,
            help_text=f"Days until the link stops working (1–{SHARE_DAYS_MAX}, default {SHARE_DAYS_DEFAULT}).",
        )  # fmt: skip

    @extend_schema(
        summary="A run's share links, newest first (their tokens are never shown again)", responses=RunShareOutputSerializer(many=True)
    )
    def get(self, request: Request, workspace_slug: str, run_id: int) -> Response:
        run = lookups.run_get(workspace=self.workspace, pk=run_id)
        return Response(RunShareOutputSerializer(selectors.run_shares(run=run), many=True).data)

    @extend_schema(
        summary="Make a read-only public link to the run's report (member); the url is shown once",
        request=InputSerializer,
        responses={201: RunShareCreatedSerializer},
    )
    def post(self, request: Request, workspace_slug: str, run_id: int) -> Response:
        run = lookups.run_get(workspace=self.workspace, pk=run_id)
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        share, raw = services.run_share_create(run=run, user=request.user, expires_in_days=data.validated_data["expires_in_days"])
        body = {"id": share.pk, "url": share_url(request, raw), "expires_at": share.expires_at}
        return Response(RunShareCreatedSerializer(body).data, status=status.HTTP_201_CREATED)


class RunShareDetailApi(WorkspaceApiView):
    @extend_schema(summary="Revoke a share link (member): it answers 404 from now on", request=None, responses={204: None})
    def delete(self, request: Request, workspace_slug: str, run_id: int, share_id: int) -> Response:
        run = lookups.run_get(workspace=self.workspace, pk=run_id)
        share: RunShare = lookups.run_share_get(run=run, pk=share_id)
        services.run_share_revoke(share=share, user=request.user)
        return Response(status=status.HTTP_204_NO_CONTENT)

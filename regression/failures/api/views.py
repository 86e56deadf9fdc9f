"""The failures review API: one view, one action (docs/style.md §18)."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from regression.failures.presenters import ReviewOut, review_json
from regression.failures.selectors import failure_review
from runs import lookups
from workspaces.api.base import WorkspaceApiView


class RunFailuresApi(WorkspaceApiView):
    class OutputSerializer(serializers.Serializer[ReviewOut]):
        run_id = serializers.IntegerField()
        run_status = serializers.CharField()
        summary = serializers.JSONField()
        filters = serializers.JSONField()
        shown_cases = serializers.IntegerField()
        clusters = serializers.ListField(child=serializers.JSONField())

    @extend_schema(
        summary="A run's failed cases, grouped into clusters by failure class and fingerprint",
        responses=OutputSerializer,
        parameters=[
            OpenApiParameter("lane", int, description="Only cases of this lane (a lane id of the run)"),
            OpenApiParameter("class", str, description="security_finding | policy_denial | timeout | agent_error | run_error | tool_failure | "
                             "validator_error | wrong_answer"),
            OpenApiParameter("cluster", str, description="Only this cluster (its fingerprint)"),
            OpenApiParameter("severity", str, description="blocking | warning | info"),
        ],
    )  # fmt: skip
    def get(self, request: Request, workspace_slug: str, run_id: int) -> Response:
        run = lookups.run_get(workspace=self.workspace, pk=run_id)
        return Response(review_json(failure_review(run=run, query=request.query_params)))

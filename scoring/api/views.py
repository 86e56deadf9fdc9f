"""Scorecard API (one APIView per action, docs/style.md §18).

Scorecard reads answer 202 ``{"status": "pending"}`` while scoring is still pending and a 409
envelope (``scoring_failed``) when it errored, so CI can poll one URL until it gets a 200.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from core.api import ApiError
from runs.models import CaseRun, Lane, Run, ScoreStatus
from scoring.models import LaneScorecard
from scoring.presenters import case_verdicts, lane_scorecard_view, run_scorecard_rows
from workspaces.access import object_get_for_workspace
from workspaces.api.base import WorkspaceApiView

PENDING = {"status": "pending"}


def _scoring_failed(what: str) -> ApiError:
    return ApiError(409, "scoring_failed", f"Scoring {what} failed; see the run's scoring events for the error.")


class ScorecardStatusSerializer(serializers.Serializer[Any]):
    status = serializers.CharField()


class RunScorecardApi(WorkspaceApiView):
    class OutputSerializer(serializers.Serializer[Any]):
        status = serializers.CharField()
        run_id = serializers.IntegerField()
        winner_lane_id = serializers.IntegerField(allow_null=True)
        winner_reason = serializers.CharField(allow_null=True)
        dimension_keys = serializers.ListField(child=serializers.CharField())
        lanes = serializers.ListField(child=serializers.JSONField())
        dimension_deltas_winner_vs_runner_up = serializers.JSONField()

    @extend_schema(
        summary="A run's scorecard: lanes ranked, with the winner",
        responses={200: OutputSerializer, 202: ScorecardStatusSerializer, 409: OpenApiResponse(description="Scoring errored")},
    )
    def get(self, request: Request, workspace_slug: str, run_id: int) -> Response:
        run = object_get_for_workspace(Run.objects.all(), workspace=self.workspace, pk=run_id)
        if run.score_status == ScoreStatus.PENDING:
            return Response(PENDING, status=status.HTTP_202_ACCEPTED)
        if run.score_status == ScoreStatus.ERRORED:
            raise _scoring_failed("this run")
        data = run_scorecard_rows(run)
        data.pop("error", None)
        for row in data["lanes"]:
            row.pop("is_winner", None)
            row.pop("security", None)
        return Response({"status": "scored", "run_id": run.pk, **data})


def _lane(workspace: Any, run_id: int, lane_id: int) -> Lane:
    run = object_get_for_workspace(Run.objects.all(), workspace=workspace, pk=run_id)
    return object_get_for_workspace(Lane.objects.select_related("run"), workspace=workspace, pk=lane_id, run=run)


class LaneScorecardApi(WorkspaceApiView):
    class OutputSerializer(serializers.Serializer[Any]):
        status = serializers.CharField()
        run_id = serializers.IntegerField()
        lane_id = serializers.IntegerField()
        label = serializers.CharField()  # type: ignore[assignment]  # a field named like a DRF Field attribute
        deployment = serializers.CharField()
        scorecard = serializers.JSONField()
        statistics = serializers.JSONField(
            allow_null=True,
            help_text="Over the lane's trials: trials, pass_rate, pass_rate_ci [low, high] (Wilson), score, score_ci (bootstrap), "
            "pass_at_k, pass_hat_k, case_pass_rates, flaky_cases; with one trial per case the intervals are null and "
            "uncertainty says there is no estimate.",
        )
        dimension_deck = serializers.ListField(child=serializers.JSONField())
        cases = serializers.ListField(child=serializers.JSONField())

    @extend_schema(
        summary="One lane's scorecard with per-case verdicts",
        responses={200: OutputSerializer, 202: ScorecardStatusSerializer, 409: OpenApiResponse(description="Scoring errored")},
    )
    def get(self, request: Request, workspace_slug: str, run_id: int, lane_id: int) -> Response:
        lane = _lane(self.workspace, run_id, lane_id)
        if not LaneScorecard.objects.filter(lane=lane).exists():
            if lane.run.score_status == ScoreStatus.ERRORED:
                raise _scoring_failed("this lane")
            return Response(PENDING, status=status.HTTP_202_ACCEPTED)
        view = lane_scorecard_view(lane, workspace_slug=self.workspace.slug, failures_only=request.query_params.get("failures") == "1")
        cases = [{k: v for k, v in c.items() if k != "case_run"} for c in view["cases"]]
        return Response(
            {
                "status": "scored",
                "run_id": lane.run_id,
                "lane_id": lane.pk,
                "label": lane.label,
                "deployment": view["deployment"],
                "scorecard": view["document"],
                "statistics": view["statistics"],
                "dimension_deck": view["dimension_deck"],
                "cases": cases,
            }
        )


class CaseVerdictsApi(WorkspaceApiView):
    class OutputSerializer(serializers.Serializer[Any]):
        status = serializers.CharField()
        case_run_id = serializers.IntegerField()
        case_key = serializers.CharField()
        passed = serializers.BooleanField(allow_null=True)
        overall_score = serializers.FloatField(allow_null=True)
        validators = serializers.ListField(child=serializers.JSONField())  # type: ignore[assignment]  # a field named like a DRF Field attribute

    @extend_schema(
        summary="Per-validator verdicts and evidence for one case run",
        responses={200: OutputSerializer, 202: ScorecardStatusSerializer, 409: OpenApiResponse(description="Scoring errored")},
    )
    def get(self, request: Request, workspace_slug: str, run_id: int, case_run_id: int) -> Response:
        run = object_get_for_workspace(Run.objects.all(), workspace=self.workspace, pk=run_id)
        try:
            case_run = CaseRun.objects.get(pk=case_run_id, run=run)
        except (CaseRun.DoesNotExist, ValueError):
            raise ApiError(404, "not_found", "Case run not found") from None
        if case_run.score_status == ScoreStatus.PENDING:
            return Response(PENDING, status=status.HTTP_202_ACCEPTED)
        if case_run.score_status == ScoreStatus.ERRORED:
            raise _scoring_failed("this case")
        return Response({"status": "scored", **case_verdicts(case_run, workspace_slug=self.workspace.slug)})

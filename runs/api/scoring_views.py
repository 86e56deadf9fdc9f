"""Scorecard, comparison and release-gate API (one APIView per action, STYLE.md §12).

Scorecard reads answer 202 ``{"status": "pending"}`` while scoring is still pending and a 409
envelope (``scoring_failed``) when it errored, so CI can poll one URL until it gets a 200.
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError as DjangoValidationError
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from agentclash.api import ApiError
from runs.comparisons import selectors as comparison_selectors
from runs.comparisons import services as comparison_services
from runs.comparisons.scorecards import case_verdicts, lane_scorecard_view, run_scorecard_rows
from runs.models import CaseRun, Comparison, GateResult, LaneScorecard, Run, RunAgent, ScoreStatus
from workspaces.access import object_get_for_workspace
from workspaces.api.base import WorkspaceApiView

PENDING = {"status": "pending"}


def _raise_validation(exc: DjangoValidationError) -> None:
    fields = exc.message_dict if hasattr(exc, "error_dict") else {"non_field_errors": exc.messages}
    first_field, first_messages = next(iter(fields.items()))
    extra = {"reason_code": exc.reason_code} if hasattr(exc, "reason_code") else {}
    raise ApiError(400, getattr(exc, "reason_code", None) or "invalid_request",
                   f"Invalid input: {first_field}: {first_messages[0]}", fields, extra) from exc


def _scoring_failed(what: str) -> ApiError:
    return ApiError(409, "scoring_failed", f"Scoring {what} failed; see the run's scoring events for the error.")


class ScorecardStatusSerializer(serializers.Serializer):
    status = serializers.CharField()


class RunScorecardApi(WorkspaceApiView):
    class OutputSerializer(serializers.Serializer):
        status = serializers.CharField()
        run_id = serializers.IntegerField()
        winner_lane_id = serializers.IntegerField(allow_null=True)
        winner_reason = serializers.CharField(allow_null=True)
        dimension_keys = serializers.ListField(child=serializers.CharField())
        lanes = serializers.ListField(child=serializers.JSONField())
        dimension_deltas_winner_vs_runner_up = serializers.JSONField()

    @extend_schema(summary="A run's scorecard: lanes ranked, with the winner",
                   responses={200: OutputSerializer, 202: ScorecardStatusSerializer, 409: OpenApiResponse(description="Scoring errored")})
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
        return Response({"status": "scored", "run_id": run.pk, **data})


def _lane(workspace: Any, run_id: int, lane_id: int) -> RunAgent:
    run = object_get_for_workspace(Run.objects.all(), workspace=workspace, pk=run_id)
    return object_get_for_workspace(RunAgent.objects.select_related("run"), workspace=workspace, pk=lane_id, run=run)


class LaneScorecardApi(WorkspaceApiView):
    class OutputSerializer(serializers.Serializer):
        status = serializers.CharField()
        run_id = serializers.IntegerField()
        lane_id = serializers.IntegerField()
        label = serializers.CharField()
        deployment = serializers.CharField()
        scorecard = serializers.JSONField()
        dimension_deck = serializers.ListField(child=serializers.JSONField())
        cases = serializers.ListField(child=serializers.JSONField())

    @extend_schema(summary="One lane's scorecard with per-case verdicts",
                   responses={200: OutputSerializer, 202: ScorecardStatusSerializer, 409: OpenApiResponse(description="Scoring errored")})
    def get(self, request: Request, workspace_slug: str, run_id: int, lane_id: int) -> Response:
        lane = _lane(self.workspace, run_id, lane_id)
        if not LaneScorecard.objects.filter(lane=lane).exists():
            if lane.run.score_status == ScoreStatus.ERRORED:
                raise _scoring_failed("this lane")
            return Response(PENDING, status=status.HTTP_202_ACCEPTED)
        view = lane_scorecard_view(lane, workspace_slug=self.workspace.slug, failures_only=request.query_params.get("failures") == "1")
        cases = [{k: v for k, v in c.items() if k != "case_run"} for c in view["cases"]]
        return Response({"status": "scored", "run_id": lane.run_id, "lane_id": lane.pk, "label": lane.label,
                         "deployment": view["deployment"], "scorecard": view["document"],
                         "dimension_deck": view["dimension_deck"], "cases": cases})


class CaseVerdictsApi(WorkspaceApiView):
    class OutputSerializer(serializers.Serializer):
        status = serializers.CharField()
        case_run_id = serializers.IntegerField()
        case_key = serializers.CharField()
        passed = serializers.BooleanField(allow_null=True)
        overall_score = serializers.FloatField(allow_null=True)
        validators = serializers.ListField(child=serializers.JSONField())

    @extend_schema(summary="Per-validator verdicts and evidence for one case run",
                   responses={200: OutputSerializer, 202: ScorecardStatusSerializer, 409: OpenApiResponse(description="Scoring errored")})
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


# -- comparisons and gates --------------------------------------------------------------------


def comparison_out(comparison: Comparison) -> dict[str, Any]:
    latest = getattr(comparison, "latest_verdict", None)
    return {
        "id": comparison.pk,
        "status": comparison.status,
        "reason_code": comparison.reason_code or None,
        "baseline_run_id": comparison.baseline_run_id,
        "candidate_run_id": comparison.candidate_run_id,
        "baseline_lane_id": comparison.baseline_lane_id,
        "candidate_lane_id": comparison.candidate_lane_id,
        "fingerprint": comparison.fingerprint,
        "latest_gate_verdict": latest,
        "created_at": comparison.created_at,
    }


def gate_out(gate: GateResult) -> dict[str, Any]:
    return {
        "id": gate.pk,
        "comparison_id": gate.comparison_id,
        "verdict": gate.verdict,
        "reason_code": gate.reason_code,
        "summary": gate.summary,
        "policy": gate.policy_snapshot,
        "policy_fingerprint": gate.policy_fingerprint,
        "dimension_results": (gate.details or {}).get("dimension_results") or {},
        "triggered_conditions": (gate.details or {}).get("triggered_conditions") or [],
        "created_at": gate.created_at,
    }


class ComparisonOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    status = serializers.CharField()
    reason_code = serializers.CharField(allow_null=True)
    baseline_run_id = serializers.IntegerField()
    candidate_run_id = serializers.IntegerField()
    baseline_lane_id = serializers.IntegerField()
    candidate_lane_id = serializers.IntegerField()
    fingerprint = serializers.CharField()
    latest_gate_verdict = serializers.CharField(allow_null=True)
    created_at = serializers.DateTimeField()


class ComparisonDetailOutputSerializer(ComparisonOutputSerializer):
    summary = serializers.JSONField()
    gates = serializers.ListField(child=serializers.JSONField())


class GateOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    comparison_id = serializers.IntegerField()
    verdict = serializers.CharField()
    reason_code = serializers.CharField()
    summary = serializers.CharField()
    policy = serializers.JSONField()
    policy_fingerprint = serializers.CharField()
    dimension_results = serializers.JSONField()
    triggered_conditions = serializers.ListField(child=serializers.JSONField())
    created_at = serializers.DateTimeField()


class _PageSerializer(serializers.Serializer):
    """Passes the already-built dicts through the paginator."""

    def to_representation(self, instance: Any) -> Any:
        return instance


class ComparisonListApi(WorkspaceApiView):
    class InputSerializer(serializers.Serializer):
        baseline_run_id = serializers.IntegerField()
        candidate_run_id = serializers.IntegerField()
        baseline_lane_id = serializers.IntegerField(required=False, allow_null=True)
        candidate_lane_id = serializers.IntegerField(required=False, allow_null=True)

    @extend_schema(summary="Comparisons of this workspace, newest first", responses=ComparisonOutputSerializer(many=True))
    def get(self, request: Request, workspace_slug: str) -> Response:
        rows = comparison_selectors.comparison_list(workspace=self.workspace)

        class Out(_PageSerializer):
            def to_representation(self, instance: Comparison) -> Any:
                return ComparisonOutputSerializer(comparison_out(instance)).data

        return self.paginate(request, rows, Out)

    @extend_schema(summary="Compare a candidate with a baseline (idempotent: 200 when it already existed)",
                   request=InputSerializer, responses={201: ComparisonDetailOutputSerializer, 200: ComparisonDetailOutputSerializer})
    def post(self, request: Request, workspace_slug: str) -> Response:
        serializer = self.InputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        runs = Run.objects.all()
        baseline_run = object_get_for_workspace(runs, workspace=self.workspace, pk=data["baseline_run_id"])
        candidate_run = object_get_for_workspace(runs, workspace=self.workspace, pk=data["candidate_run_id"])
        lanes = RunAgent.objects.all()
        baseline_lane = (object_get_for_workspace(lanes, workspace=self.workspace, pk=data["baseline_lane_id"])
                         if data.get("baseline_lane_id") else None)
        candidate_lane = (object_get_for_workspace(lanes, workspace=self.workspace, pk=data["candidate_lane_id"])
                          if data.get("candidate_lane_id") else None)
        try:
            comparison, created = comparison_services.comparison_get_or_create(
                workspace=self.workspace, user=request.user, baseline_run=baseline_run, candidate_run=candidate_run,
                baseline_lane=baseline_lane, candidate_lane=candidate_lane)
        except DjangoValidationError as exc:
            _raise_validation(exc)
        body = {**comparison_out(comparison), "summary": comparison.summary,
                "gates": [gate_out(g) for g in comparison.gate_results.all()]}
        return Response(body, status=status.HTTP_201_CREATED if created else status.HTTP_200_OK)


class ComparisonDetailApi(WorkspaceApiView):
    @extend_schema(summary="One comparison with its summary and gate history", responses=ComparisonDetailOutputSerializer)
    def get(self, request: Request, workspace_slug: str, comparison_id: int) -> Response:
        comparison = object_get_for_workspace(comparison_selectors.comparison_list(workspace=self.workspace),
                                              workspace=self.workspace, pk=comparison_id)
        return Response({**comparison_out(comparison), "summary": comparison.summary,
                         "gates": [gate_out(g) for g in comparison.gate_results.all()]})


class ComparisonGateEvaluateApi(WorkspaceApiView):
    class InputSerializer(serializers.Serializer):
        policy = serializers.JSONField(required=False, allow_null=True,
                                       help_text="A policy object, or JSON/YAML text; omitted or empty → the default policy.")

    @extend_schema(summary="Evaluate a release gate on a comparison", request=InputSerializer,
                   responses={200: GateOutputSerializer, 201: GateOutputSerializer})
    def post(self, request: Request, workspace_slug: str, comparison_id: int) -> Response:
        comparison = object_get_for_workspace(Comparison.objects.all(), workspace=self.workspace, pk=comparison_id)
        serializer = self.InputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        policy = serializer.validated_data.get("policy")
        if policy is not None and not isinstance(policy, (dict, str)):
            raise ApiError(400, "invalid_request", "Invalid input: policy: must be an object or JSON/YAML text",
                           {"policy": ["must be an object or JSON/YAML text"]})
        try:
            gate, created = comparison_services.gate_evaluate_get_or_create(comparison=comparison, user=request.user,
                                                                            policy=policy)
        except DjangoValidationError as exc:
            _raise_validation(exc)
        return Response(gate_out(gate), status=status.HTTP_201_CREATED if created else status.HTTP_200_OK)


class GateListApi(WorkspaceApiView):
    @extend_schema(summary="Release-gate results of this workspace, newest first", responses=GateOutputSerializer(many=True))
    def get(self, request: Request, workspace_slug: str) -> Response:
        class Out(_PageSerializer):
            def to_representation(self, instance: GateResult) -> Any:
                return GateOutputSerializer(gate_out(instance)).data

        return self.paginate(request, comparison_selectors.gate_list(workspace=self.workspace), Out)

"""Comparison and release-gate API (one APIView per action, docs/style.md §18)."""

from __future__ import annotations

import datetime as dt
from typing import Any, TypedDict, cast

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from comparisons import selectors as comparison_selectors
from comparisons import services as comparison_services
from comparisons.models import Comparison, GateResult
from core.api import ApiError
from engine.scoring.documents import ComparisonSummary, GateDimensionResult, GatePolicy, GateResultDocument, TriggeredCondition
from engine.scoring.gates import statistics_lines
from engine.scoring.stats import GateStatistics
from runs.models import Lane, Run
from workspaces.access import object_get_for_workspace
from workspaces.api.base import WorkspaceApiView
from workspaces.models import TokenScope


class ComparisonOut(TypedDict):
    """A comparison as the API shows it (``ComparisonOutputSerializer`` documents it)."""

    id: int
    status: str
    reason_code: str | None
    baseline_run_id: int
    candidate_run_id: int
    baseline_lane_id: int
    candidate_lane_id: int
    fingerprint: str
    latest_gate_verdict: str | None
    created_at: dt.datetime


class GateOut(TypedDict):
    """A release-gate result as the API shows it (``GateOutputSerializer`` documents it)."""

    id: int
    comparison_id: int
    verdict: str
    reason_code: str
    summary: str
    policy: GatePolicy
    policy_fingerprint: str
    dimension_results: dict[str, GateDimensionResult]
    triggered_conditions: list[TriggeredCondition]
    statistics: GateStatistics | None
    trials_text: list[str]
    created_at: dt.datetime


class ComparisonDetailOut(ComparisonOut):
    summary: ComparisonSummary
    gates: list[GateOut]


def comparison_out(comparison: Comparison) -> ComparisonOut:
    latest: str | None = getattr(comparison, "latest_verdict", None)
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


def comparison_detail_out(comparison: Comparison) -> ComparisonDetailOut:
    # The raw trials (every case run's verdict and score) stay out: the gates' statistics say what they showed.
    summary = cast(ComparisonSummary, {k: v for k, v in (comparison.summary or {}).items() if k != "trials"})
    gates = [gate_out(g) for g in comparison.gate_results.all()]
    return {**comparison_out(comparison), "summary": summary, "gates": gates}


def gate_out(gate: GateResult) -> GateOut:
    details: GateResultDocument | None = gate.details or None
    policy: GatePolicy = gate.policy_snapshot
    return {
        "id": gate.pk,
        "comparison_id": gate.comparison_id,
        "verdict": gate.verdict,
        "reason_code": gate.reason_code,
        "summary": gate.summary,
        "policy": policy,
        "policy_fingerprint": gate.policy_fingerprint,
        "dimension_results": (details.get("dimension_results") if details else None) or {},
        "triggered_conditions": (details.get("triggered_conditions") if details else None) or [],
        "statistics": (details.get("statistics") if details else None) or None,
        "trials_text": statistics_lines(details.get("statistics") if details else None),
        "created_at": gate.created_at,
    }


class ComparisonOutputSerializer(serializers.Serializer[ComparisonOut]):
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


class GateOutputSerializer(serializers.Serializer[GateOut]):
    id = serializers.IntegerField()
    comparison_id = serializers.IntegerField()
    verdict = serializers.CharField()
    reason_code = serializers.CharField()
    summary = serializers.CharField()
    policy = serializers.JSONField()
    policy_fingerprint = serializers.CharField()
    dimension_results = serializers.JSONField()
    triggered_conditions = serializers.ListField(child=serializers.JSONField())
    statistics = serializers.JSONField(
        allow_null=True,
        help_text="What the trials said: decision, trials_per_case, single_trial, max_regression, confidence, "
        "more_trials_per_case, note, and per metric (pass_rate, score) the paired difference with its interval; "
        "null for a comparison stored without trials.",
    )
    trials_text = serializers.ListField(
        child=serializers.CharField(), help_text="The trials behind the verdict in words, one line each (empty without trials)."
    )
    created_at = serializers.DateTimeField()


class _PageSerializer(serializers.Serializer[Any]):
    """Passes the already-built dicts through the paginator."""

    def to_representation(self, instance: Any) -> Any:
        return instance


class ComparisonListApi(WorkspaceApiView):
    token_scope = {"POST": TokenScope.RUN}  # a run-scoped token may do this (docs/operations.md "API tokens")

    class InputSerializer(serializers.Serializer[Any]):
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

    @extend_schema(
        summary="Compare a candidate with a baseline (idempotent: 200 when it already existed)",
        request=InputSerializer,
        responses={201: ComparisonDetailOutputSerializer, 200: ComparisonDetailOutputSerializer},
    )
    def post(self, request: Request, workspace_slug: str) -> Response:
        serializer = self.InputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        runs = Run.objects.all()
        baseline_run = object_get_for_workspace(runs, workspace=self.workspace, pk=data["baseline_run_id"])
        candidate_run = object_get_for_workspace(runs, workspace=self.workspace, pk=data["candidate_run_id"])
        lanes = Lane.objects.all()
        baseline_lane = (
            object_get_for_workspace(lanes, workspace=self.workspace, pk=data["baseline_lane_id"]) if data.get("baseline_lane_id") else None
        )
        candidate_lane = (
            object_get_for_workspace(lanes, workspace=self.workspace, pk=data["candidate_lane_id"])
            if data.get("candidate_lane_id")
            else None
        )
        comparison, created = comparison_services.comparison_get_or_create(
            workspace=self.workspace,
            user=request.user,
            baseline_run=baseline_run,
            candidate_run=candidate_run,
            baseline_lane=baseline_lane,
            candidate_lane=candidate_lane,
        )
        return Response(comparison_detail_out(comparison), status=status.HTTP_201_CREATED if created else status.HTTP_200_OK)


class ComparisonDetailApi(WorkspaceApiView):
    @extend_schema(summary="One comparison with its summary and gate history", responses=ComparisonDetailOutputSerializer)
    def get(self, request: Request, workspace_slug: str, comparison_id: int) -> Response:
        comparison = object_get_for_workspace(
            comparison_selectors.comparison_list(workspace=self.workspace, summaries=True), workspace=self.workspace, pk=comparison_id
        )
        return Response(comparison_detail_out(comparison))


class ComparisonGateEvaluateApi(WorkspaceApiView):
    token_scope = {"POST": TokenScope.RUN}  # a run-scoped token may do this (docs/operations.md "API tokens")

    class InputSerializer(serializers.Serializer[Any]):
        policy = serializers.JSONField(
            required=False, allow_null=True, help_text="A policy object, or JSON/YAML text; omitted or empty → the default policy."
        )

    @extend_schema(
        summary="Evaluate a release gate on a comparison",
        request=InputSerializer,
        responses={200: GateOutputSerializer, 201: GateOutputSerializer},
    )
    def post(self, request: Request, workspace_slug: str, comparison_id: int) -> Response:
        comparison = object_get_for_workspace(Comparison.objects.all(), workspace=self.workspace, pk=comparison_id)
        serializer = self.InputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        policy = serializer.validated_data.get("policy")
        if policy is not None and not isinstance(policy, (dict, str)):
            raise ApiError(
                400,
                "invalid_request",
                "Invalid input: policy: must be an object or JSON/YAML text",
                {"policy": ["must be an object or JSON/YAML text"]},
            )
        gate, created = comparison_services.gate_evaluate_get_or_create(comparison=comparison, user=request.user, policy=policy)
        return Response(gate_out(gate), status=status.HTTP_201_CREATED if created else status.HTTP_200_OK)


class GateListApi(WorkspaceApiView):
    @extend_schema(summary="Release-gate results of this workspace, newest first", responses=GateOutputSerializer(many=True))
    def get(self, request: Request, workspace_slug: str) -> Response:
        class Out(_PageSerializer):
            def to_representation(self, instance: GateResult) -> Any:
                return GateOutputSerializer(gate_out(instance)).data

        return self.paginate(request, comparison_selectors.gate_list(workspace=self.workspace), Out)

"""Run API: one view per action (docs/style.md §18). Objects of another workspace are 404."""

from __future__ import annotations

from django.http import StreamingHttpResponse
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from core.api import ApiError, query_choice, query_int
from packs.models import PackVersion
from runs import lookups, results, selectors, services
from runs.api.serializers import CaseRunOutputSerializer, EventOutputSerializer, RepeatsField, RunOutputSerializer
from runs.models import MAX_REPEATS, RunStatus
from workspaces.access import object_get_for_workspace
from workspaces.api.base import WorkspaceApiView
from workspaces.idempotency import IDEMPOTENCY_PARAMETER, idempotent
from workspaces.models import TokenScope


class RunListApi(WorkspaceApiView):
    @extend_schema(
        responses=RunOutputSerializer(many=True), summary="Runs of the workspace, newest first",
        parameters=[OpenApiParameter("status", str, enum=RunStatus.values, description="Only runs in this status"),
                    OpenApiParameter("pack", int, description="Only runs of this pack")],
    )  # fmt: skip
    def get(self, request: Request, workspace_slug: str) -> Response:
        runs = selectors.run_list(
            workspace=self.workspace, status=query_choice(request, "status", RunStatus.values), pack_id=query_int(request, "pack")
        )
        return self.paginate(request, runs, RunOutputSerializer)


class RunCreateApi(WorkspaceApiView):
    token_scope = {"POST": TokenScope.RUN}  # a run-scoped token may do this (docs/operations.md "API tokens")

    class InputSerializer(serializers.Serializer):
        pack_version_id = serializers.IntegerField()
        input_set_id = serializers.IntegerField(required=False, allow_null=True)
        deployment_ids = serializers.ListField(child=serializers.IntegerField(), allow_empty=False)
        name = serializers.CharField(required=False, allow_blank=True, max_length=200)
        judge_deployments = serializers.DictField(
            child=serializers.IntegerField(allow_null=True),
            required=False,
            help_text="LLM judge model as written in the pack → deployment id (null: no judge for it). Models left "
            "out resolve to the deployment of exactly that model, else the workspace's default judge.",
        )
        allow_missing_judges = serializers.BooleanField(
            required=False,
            default=False,
            help_text='Start even if a judge model has no deployment: its dimensions are unavailable ("no judge configured").',
        )
        simulator_deployment_id = serializers.IntegerField(
            required=False,
            allow_null=True,
            help_text="The deployment that plays llm user-simulator phases (multi_turn packs that have them).",
        )
        regression_suite_ids = serializers.ListField(
            child=serializers.IntegerField(), required=False, default=list,
            help_text="Regression suites whose active cases the run includes (docs/regression-suites.md).",
        )  # fmt: skip
        regression_case_ids = serializers.ListField(
            child=serializers.IntegerField(), required=False, default=list, help_text="Single regression cases to include."
        )
        regression_scope = serializers.ChoiceField(
            choices=["full", "suite_only"], required=False, default="full",
            help_text="full: the pack's cases plus the regression cases; suite_only: the regression cases alone.",
        )  # fmt: skip
        include_proposed = serializers.BooleanField(required=False, default=False, help_text="Include the suites' proposed cases too.")
        race_context = serializers.BooleanField(
            required=False, default=False,
            help_text="Peer standings: between steps each agent is told how the other lanes stand. Needs two or more deployments.",
        )  # fmt: skip
        repeats = RepeatsField(required=False, default=1)
        max_repeats = serializers.IntegerField(
            required=False, allow_null=True, min_value=2, max_value=MAX_REPEATS,
            help_text='With repeats "auto": the most trials of one case the rounds may reach.',
        )  # fmt: skip
        max_regression = serializers.FloatField(
            required=False, allow_null=True,
            help_text='With repeats "auto": the drop the rounds\' sequential gate tolerates, 0 < value < 1 (default 0.05).',
        )  # fmt: skip
        confidence = serializers.FloatField(
            required=False, allow_null=True,
            help_text='With repeats "auto": the confidence of the rounds\' sequential gate, 0.5 ≤ value < 1 (default 0.95).',
        )  # fmt: skip

    @extend_schema(request=InputSerializer, responses={201: RunOutputSerializer}, summary="Start a run", parameters=[IDEMPOTENCY_PARAMETER])
    @idempotent
    def post(self, request: Request, workspace_slug: str) -> Response:
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        values = data.validated_data
        version = object_get_for_workspace(PackVersion.objects.all(), workspace=self.workspace, pk=values["pack_version_id"])
        run = services.run_create(
            workspace=self.workspace, user=request.user, pack_version=version,
            deployment_ids=values["deployment_ids"], input_set_id=values.get("input_set_id"), name=values.get("name", ""),
            judge_deployments=values.get("judge_deployments"), allow_missing_judges=values.get("allow_missing_judges", False),
            simulator_deployment_id=values.get("simulator_deployment_id"),
            regression_suite_ids=values["regression_suite_ids"], regression_case_ids=values["regression_case_ids"],
            regression_scope=values["regression_scope"], include_proposed=values["include_proposed"],
            race_context=values["race_context"], repeats=values["repeats"], max_repeats=values.get("max_repeats"),
            max_regression=values.get("max_regression"), confidence=values.get("confidence"),
        )  # fmt: skip
        run = lookups.run_get(workspace=self.workspace, pk=run.pk)
        return Response(RunOutputSerializer(run).data, status=status.HTTP_201_CREATED)


class RunCollectionApi(RunListApi, RunCreateApi):
    """``/runs``: GET lists (RunListApi), POST starts a run (RunCreateApi)."""


class RunDetailApi(WorkspaceApiView):
    @extend_schema(responses=RunOutputSerializer, summary="One run with its lanes and case counts")
    def get(self, request: Request, workspace_slug: str, run_id: int) -> Response:
        return Response(RunOutputSerializer(lookups.run_get(workspace=self.workspace, pk=run_id)).data)


class RunCaseListApi(WorkspaceApiView):
    @extend_schema(
        responses=CaseRunOutputSerializer(many=True),
        summary="Case results of a run",
        parameters=[
            OpenApiParameter("lane", int, description="Only this lane's cases"),
            OpenApiParameter("trial", int, description="Only this trial of each case (1, 2, …; runs with repeats)"),
        ],
    )
    def get(self, request: Request, workspace_slug: str, run_id: int) -> Response:
        run = lookups.run_get(workspace=self.workspace, pk=run_id)
        params = request.query_params
        cases = selectors.case_run_list(run=run, lane_id=params.get("lane"), trial=params.get("trial"))
        return self.paginate(request, cases, CaseRunOutputSerializer)


class RunEventListApi(WorkspaceApiView):
    class OutputSerializer(serializers.Serializer):
        items = EventOutputSerializer(many=True)
        next_after = serializers.IntegerField(allow_null=True)

    @extend_schema(
        responses=OutputSerializer,
        summary="Events of a run after a cursor (event id), oldest first",
        parameters=[
            OpenApiParameter("after", int, description="Last event id seen"),
            OpenApiParameter("limit", int, description="At most this many (default 100, max 1000)"),
        ],
    )
    def get(self, request: Request, workspace_slug: str, run_id: int) -> Response:
        run = lookups.run_get(workspace=self.workspace, pk=run_id)
        try:
            limit = int(request.query_params.get("limit", 100))
        except ValueError:
            raise ApiError(400, "invalid_request", "limit must be a number", fields={"limit": ["must be a number"]}) from None
        events = selectors.run_events_after(run=run, after=request.query_params.get("after"), limit=limit)
        return Response({"items": EventOutputSerializer(events, many=True).data, "next_after": events[-1].pk if events else None})


class RunEventExportApi(WorkspaceApiView):
    @extend_schema(responses={(200, "application/x-ndjson"): str}, summary="Every event of the run as JSON lines (streamed)")
    def get(self, request: Request, workspace_slug: str, run_id: int) -> StreamingHttpResponse:
        run = lookups.run_get(workspace=self.workspace, pk=run_id)
        response = StreamingHttpResponse(services.event_export_lines(run), content_type="application/x-ndjson")
        response["Content-Disposition"] = f'attachment; filename="run-{run.pk}-events.jsonl"'
        return response


class RunResultsExportApi(WorkspaceApiView):
    @extend_schema(
        responses={(200, "text/csv"): str, (200, "application/json"): dict},
        operation_id="runs_results_export",
        parameters=[
            OpenApiParameter("run_id", int, OpenApiParameter.PATH),
            OpenApiParameter("kind", str, OpenApiParameter.PATH, enum=["csv", "json"], description="results.csv or results.json"),
        ],
        summary="The run's results as results.csv or results.json (streamed): one row per case × lane × trial, "
        "the bytes of the run page's exports",
    )
    def get(self, request: Request, workspace_slug: str, run_id: int, kind: str) -> StreamingHttpResponse:
        return results.export_response(lookups.run_get(workspace=self.workspace, pk=run_id), kind)


class RunCancelApi(WorkspaceApiView):
    @extend_schema(request=None, responses=RunOutputSerializer, summary="Cancel a run that has not finished")
    def post(self, request: Request, workspace_slug: str, run_id: int) -> Response:
        run = lookups.run_get(workspace=self.workspace, pk=run_id)
        run = services.run_cancel(run=run, user=request.user)
        return Response(RunOutputSerializer(lookups.run_get(workspace=self.workspace, pk=run.pk)).data)

"""Regression suites API: one view per action (docs/style.md §18). Another workspace's id is a 404."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from core.api import ApiError
from packs.models import Pack
from regression import selectors, services
from regression.api.serializers import CoverageOutputSerializer, RegressionCaseOutputSerializer, SuiteOutputSerializer
from regression.models import RegressionCase
from runs import lookups
from workspaces.access import object_get_for_workspace
from workspaces.api.base import WorkspaceApiView
from workspaces.models import Role


class SuiteListApi(WorkspaceApiView):
    @extend_schema(responses=SuiteOutputSerializer(many=True), summary="Regression suites of the workspace, by name")
    def get(self, request: Request, workspace_slug: str) -> Response:
        return self.paginate(request, selectors.suite_list(workspace=self.workspace), SuiteOutputSerializer)


class SuiteCreateApi(WorkspaceApiView):
    class InputSerializer(serializers.Serializer[Any]):
        pack_id = serializers.IntegerField(help_text="The pack whose failed cases the suite collects.")
        name = serializers.CharField(max_length=200)
        description = serializers.CharField(required=False, allow_blank=True, default="")

    @extend_schema(request=InputSerializer, responses={201: SuiteOutputSerializer}, summary="Create a regression suite")
    def post(self, request: Request, workspace_slug: str) -> Response:
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        values = data.validated_data
        pack = object_get_for_workspace(Pack.objects.all(), workspace=self.workspace, pk=values["pack_id"])
        suite = services.regression_suite_create(
            workspace=self.workspace, user=request.user, pack=pack, name=values["name"], description=values["description"]
        )
        return Response(
            SuiteOutputSerializer(selectors.suite_get(workspace=self.workspace, pk=suite.pk)).data, status=status.HTTP_201_CREATED
        )


class SuiteCollectionApi(SuiteListApi, SuiteCreateApi):
    """``/regression-suites``: GET lists, POST creates."""


class SuiteDetailApi(WorkspaceApiView):
    """GET one suite; PATCH renames, re-describes, archives or restores it (members); DELETE
    deletes one no run has used (admins; a suite that was run is a 409 ``suite_in_use``)."""

    class InputSerializer(serializers.Serializer[Any]):
        name = serializers.CharField(required=False, max_length=200)
        description = serializers.CharField(required=False, allow_blank=True)
        archived = serializers.BooleanField(required=False, help_text="true archives the suite, false restores it.")

    def required_role(self, request: Request) -> str:
        return Role.ADMIN if request.method == "DELETE" else super().required_role(request)

    @extend_schema(responses=SuiteOutputSerializer, summary="One regression suite")
    def get(self, request: Request, workspace_slug: str, suite_id: int) -> Response:
        return Response(SuiteOutputSerializer(selectors.suite_get(workspace=self.workspace, pk=suite_id)).data)

    @extend_schema(request=InputSerializer, responses=SuiteOutputSerializer, summary="Rename, describe, archive or restore a suite")
    def patch(self, request: Request, workspace_slug: str, suite_id: int) -> Response:
        suite = selectors.suite_get(workspace=self.workspace, pk=suite_id)
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        values = data.validated_data
        if "name" in values or "description" in values:
            services.regression_suite_update(suite=suite, user=request.user, name=values.get("name"), description=values.get("description"))
        if "archived" in values:
            services.regression_suite_set_archived(suite=suite, user=request.user, archived=values["archived"])
        return Response(SuiteOutputSerializer(selectors.suite_get(workspace=self.workspace, pk=suite.pk)).data)

    @extend_schema(request=None, responses={204: None}, summary="Delete a suite no run has used (else 409: archive it)")
    def delete(self, request: Request, workspace_slug: str, suite_id: int) -> Response:
        suite = selectors.suite_get(workspace=self.workspace, pk=suite_id)
        services.regression_suite_delete(suite=suite, user=request.user)
        return Response(status=status.HTTP_204_NO_CONTENT)


class SuiteCaseListApi(WorkspaceApiView):
    @extend_schema(
        responses=RegressionCaseOutputSerializer(many=True),
        summary="Cases of a regression suite",
        parameters=[OpenApiParameter("status", str, description="proposed | active | archived")],
    )
    def get(self, request: Request, workspace_slug: str, suite_id: int) -> Response:
        suite = selectors.suite_get(workspace=self.workspace, pk=suite_id)
        wanted = request.query_params.get("status", "")
        if wanted and wanted not in RegressionCase.Status.values:
            message = "status must be one of proposed, active, archived"
            raise ApiError(400, "invalid_request", message, fields={"status": [message]})
        return self.paginate(request, selectors.case_list(suite=suite, status=wanted), RegressionCaseOutputSerializer)


class RegressionCaseDetailApi(WorkspaceApiView):
    class InputSerializer(serializers.Serializer[Any]):
        severity = serializers.ChoiceField(choices=RegressionCase.Severity.values)

    @extend_schema(responses=RegressionCaseOutputSerializer, summary="One regression case")
    def get(self, request: Request, workspace_slug: str, regression_case_id: int) -> Response:
        return Response(RegressionCaseOutputSerializer(selectors.case_get(workspace=self.workspace, pk=regression_case_id)).data)

    @extend_schema(request=InputSerializer, responses=RegressionCaseOutputSerializer, summary="Change a regression case's severity")
    def patch(self, request: Request, workspace_slug: str, regression_case_id: int) -> Response:
        case = selectors.case_get(workspace=self.workspace, pk=regression_case_id)
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        case = services.regression_case_set_severity(case=case, user=request.user, severity=data.validated_data["severity"])
        return Response(RegressionCaseOutputSerializer(case).data)


class _RegressionCaseStatusApi(WorkspaceApiView):
    target: str

    def post(self, request: Request, workspace_slug: str, regression_case_id: int) -> Response:
        case = selectors.case_get(workspace=self.workspace, pk=regression_case_id)
        case = services.regression_case_set_status(case=case, user=request.user, status=self.target)
        return Response(RegressionCaseOutputSerializer(case).data)


@extend_schema(request=None, responses=RegressionCaseOutputSerializer, summary="Activate a regression case (runs include it)")
class RegressionCaseActivateApi(_RegressionCaseStatusApi):
    target = RegressionCase.Status.ACTIVE


@extend_schema(request=None, responses=RegressionCaseOutputSerializer, summary="Archive a regression case (runs leave it out)")
class RegressionCaseArchiveApi(_RegressionCaseStatusApi):
    target = RegressionCase.Status.ARCHIVED


class CasePromoteApi(WorkspaceApiView):
    class InputSerializer(serializers.Serializer[Any]):
        suite_id = serializers.IntegerField()
        status = serializers.ChoiceField(choices=["proposed", "active"], default="proposed")
        severity = serializers.ChoiceField(choices=RegressionCase.Severity.values, default="blocking")
        title = serializers.CharField(required=False, allow_blank=True, max_length=200, default="")

    @extend_schema(
        request=InputSerializer,
        responses={201: RegressionCaseOutputSerializer, 200: RegressionCaseOutputSerializer},
        summary="Promote a failed case into a regression suite (200: it already was)",
    )
    def post(self, request: Request, workspace_slug: str, run_id: int, case_run_id: int) -> Response:
        run = lookups.run_get(workspace=self.workspace, pk=run_id)
        case_run = lookups.case_run_get(run=run, pk=case_run_id)
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        values = data.validated_data
        suite = selectors.suite_get(workspace=self.workspace, pk=values["suite_id"])
        case, created = services.regression_case_promote(
            workspace=self.workspace, user=request.user, case_run=case_run, suite=suite,
            status=values["status"], severity=values["severity"], title=values["title"],
        )  # fmt: skip
        return Response(RegressionCaseOutputSerializer(case).data, status=status.HTTP_201_CREATED if created else status.HTTP_200_OK)


class RunRegressionCoverageApi(WorkspaceApiView):
    pagination_class = None  # one row per suite of the run: a short, fixed list

    @extend_schema(responses=CoverageOutputSerializer(many=True), summary="A run's regression coverage, per suite")
    def get(self, request: Request, workspace_slug: str, run_id: int) -> Response:
        run = lookups.run_get(workspace=self.workspace, pk=run_id)
        return Response(CoverageOutputSerializer(selectors.run_regression_coverage(run=run), many=True).data)

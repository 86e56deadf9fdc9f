from __future__ import annotations

from django.urls import path

from regression.api import views
from regression.failures.api.views import RunFailuresApi

urlpatterns = [
    path("regression-suites", views.SuiteCollectionApi.as_view(), name="api-regression-suites"),
    path("regression-suites/<int:suite_id>", views.SuiteDetailApi.as_view(), name="api-regression-suite"),
    path("regression-suites/<int:suite_id>/cases", views.SuiteCaseListApi.as_view(), name="api-regression-suite-cases"),
    path("regression-cases/<int:regression_case_id>", views.RegressionCaseDetailApi.as_view(), name="api-regression-case"),
    path(
        "regression-cases/<int:regression_case_id>/activate", views.RegressionCaseActivateApi.as_view(), name="api-regression-case-activate"
    ),
    path("regression-cases/<int:regression_case_id>/archive", views.RegressionCaseArchiveApi.as_view(), name="api-regression-case-archive"),
    path("runs/<int:run_id>/cases/<int:case_run_id>/promote", views.CasePromoteApi.as_view(), name="api-run-case-promote"),
    path("runs/<int:run_id>/failures", RunFailuresApi.as_view(), name="api-run-failures"),
    path("runs/<int:run_id>/regression", views.RunRegressionCoverageApi.as_view(), name="api-run-regression"),
]

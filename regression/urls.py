from __future__ import annotations

from django.urls import path

from regression import views
from regression.failures import views as failures_views

app_name = "regression"

urlpatterns = [
    path("regression-suites/", views.suite_list, name="suites"),
    path("regression-suites/<int:suite_id>/", views.suite_detail, name="suite"),
    path("regression-suites/<int:suite_id>/edit/", views.suite_edit, name="suite_edit"),
    path("regression-suites/<int:suite_id>/archive/", views.suite_archive, name="suite_archive"),
    path("regression-suites/<int:suite_id>/delete/", views.suite_delete, name="suite_delete"),
    path("regression-cases/<int:regression_case_id>/status/", views.case_status, name="case_status"),
    path("regression-cases/<int:regression_case_id>/severity/", views.case_severity, name="case_severity"),
    path("runs/<int:run_id>/cases/<int:case_run_id>/promote/", views.case_promote, name="promote"),
    path("runs/<int:run_id>/failures/", failures_views.run_failures, name="failures"),
    path("runs/<int:run_id>/failures/promote/", views.case_promote_batch, name="promote_batch"),
    path("runs/<int:run_id>/regression-coverage/", views.run_coverage, name="run_coverage"),
]

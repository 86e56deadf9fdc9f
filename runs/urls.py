from __future__ import annotations

from django.urls import path

from runs import views

app_name = "runs"

urlpatterns = [
    path("runs/", views.run_list, name="list"),
    path("runs/new/", views.run_create, name="create"),
    path("runs/<int:run_id>/", views.run_detail, name="detail"),
    path("runs/<int:run_id>/cancel/", views.run_cancel, name="cancel"),
    path("runs/<int:run_id>/results.csv", views.run_results_csv, name="results_csv"),
    path("runs/<int:run_id>/results.json", views.run_results_json, name="results_json"),
    path("runs/<int:run_id>/report.html", views.run_report, name="report"),
    path("runs/<int:run_id>/shares/", views.run_shares, name="shares"),
    path("runs/<int:run_id>/shares/new/", views.run_share_create, name="share_create"),
    path("runs/<int:run_id>/shares/<int:share_id>/revoke/", views.run_share_revoke, name="share_revoke"),
    path("runs/<int:run_id>/cases/<int:case_run_id>/output/", views.case_output, name="case_output"),
    path("runs/<int:run_id>/cases/<int:case_run_id>/", views.case_replay, name="case_replay"),
    path("runs/<int:run_id>/cases/<int:case_run_id>/inputs/<int:event_pk>/", views.case_model_input, name="case_model_input"),
    path("runs/<int:run_id>/cases/<int:case_run_id>/events/<int:event_pk>/payload/", views.case_event_payload, name="case_event_payload"),
    path("runs/<int:run_id>/cases/<int:case_run_id>/vs/<int:other_id>/", views.case_side_by_side, name="case_side_by_side"),
]

from __future__ import annotations

from django.urls import path

from runs.hosted import views

app_name = "hosted"

urlpatterns = [
    path("<int:case_run_id>/events", views.hosted_event_post, name="event_post"),
]

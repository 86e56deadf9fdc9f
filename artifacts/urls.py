from __future__ import annotations

from django.urls import path

from artifacts import views

app_name = "artifacts"

urlpatterns = [
    path("", views.artifact_list, name="list"),
    path("upload/", views.artifact_upload, name="upload"),
    path("<uuid:artifact_id>/download/", views.artifact_download, name="download"),
]

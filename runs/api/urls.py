from __future__ import annotations

from django.urls import path

from runs.api import views

urlpatterns = [
    path("runs", views.RunCollectionApi.as_view(), name="api-run-list"),
    path("runs/<int:pk>", views.RunDetailApi.as_view(), name="api-run-detail"),
    path("runs/<int:pk>/cases", views.RunCaseListApi.as_view(), name="api-run-cases"),
    path("runs/<int:pk>/events", views.RunEventListApi.as_view(), name="api-run-events"),
    path("runs/<int:pk>/events.jsonl", views.RunEventExportApi.as_view(), name="api-run-events-export"),
    path("runs/<int:pk>/cancel", views.RunCancelApi.as_view(), name="api-run-cancel"),
]

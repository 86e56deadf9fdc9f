from __future__ import annotations

from django.urls import path

from runs.search import views

app_name = "search"

urlpatterns = [
    path("search/", views.results, name="results"),
]

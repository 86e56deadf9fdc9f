from __future__ import annotations

from django.urls import path

from secrets_app.api import views

urlpatterns = [
    path("secrets", views.SecretListApi.as_view(), name="api-secret-list"),
    path("secrets/<str:key>", views.SecretDetailApi.as_view(), name="api-secret-detail"),
]

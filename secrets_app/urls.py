from __future__ import annotations

from django.urls import path

from secrets_app import views

app_name = "secrets_app"

urlpatterns = [
    path("", views.secret_list, name="list"),
    path("set/", views.secret_set, name="set"),
    path("<str:key>/delete/", views.secret_delete, name="delete"),
    path("audit/", views.audit_list, name="audit"),
]

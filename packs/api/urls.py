from __future__ import annotations

from django.urls import path

from packs.api import views

urlpatterns = [
    path("packs", views.PackListApi.as_view(), name="api-pack-list"),
    path("packs/validate", views.PackValidateApi.as_view(), name="api-pack-validate"),
    path("packs/publish", views.PackPublishApi.as_view(), name="api-pack-publish"),
    path("packs/<int:pk>", views.PackDetailApi.as_view(), name="api-pack-detail"),
    path("packs/<int:pk>/versions", views.PackVersionListApi.as_view(), name="api-pack-version-list"),
    path("pack-versions/<int:pk>", views.PackVersionDetailApi.as_view(), name="api-pack-version-detail"),
    path("pack-versions/<int:pk>/input-sets", views.PackVersionInputSetListApi.as_view(), name="api-pack-version-input-sets"),
    path("input-sets/<int:pk>/cases", views.InputSetCaseListApi.as_view(), name="api-input-set-cases"),
]

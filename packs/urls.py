from __future__ import annotations

from django.urls import path

from packs import views

app_name = "packs"

urlpatterns = [
    path("", views.pack_list, name="list"),
    path("new/", views.pack_new, name="new"),
    path("library/", views.library, name="library"),
    path("library/<str:slug>/add/", views.library_add, name="library_add"),
    path("<int:pk>/", views.pack_detail, name="detail"),
    path("<int:pk>/lifecycle/", views.pack_lifecycle, name="lifecycle"),
    path("<int:pk>/versions/new/", views.version_new, name="version_new"),
    path("versions/<int:pk>/", views.version_detail, name="version"),
    path("versions/<int:pk>/yaml/", views.version_yaml, name="version_yaml"),
    path("versions/<int:pk>/lifecycle/", views.version_lifecycle, name="version_lifecycle"),
]

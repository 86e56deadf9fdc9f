from __future__ import annotations

from csp.decorators import csp_update
from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path
from drf_spectacular.views import SpectacularSwaggerSplitView

from core.schema_view import SchemaView
from runs import views as run_views
from workspaces import views as workspace_views

# API-aware error pages: the JSON envelope under /api/ (e.g. a bad Host header), ours elsewhere.
handler400 = "core.views.bad_request"
handler403 = "core.views.permission_denied"
handler404 = "core.views.page_not_found"
handler500 = "core.views.server_error"

# Swagger UI under the strict CSP: the split view serves its init script as a same-origin file
# (no inline script), templates/drf_spectacular/swagger_ui.html drops the inline <style>; only
# swagger-ui.css's data: icons need a relaxation, on this page alone.
api_docs = csp_update({"img-src": ["data:"]})(SpectacularSwaggerSplitView.as_view(url_name="api-schema"))

urlpatterns = [
    path("", workspace_views.home, name="home"),
    path("healthz", workspace_views.healthz, name="healthz"),
    path("accounts/login/", auth_views.LoginView.as_view(redirect_authenticated_user=True), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("accounts/password/", auth_views.PasswordChangeView.as_view(), name="password_change"),
    path("accounts/password/done/", auth_views.PasswordChangeDoneView.as_view(), name="password_change_done"),
    path("admin/", admin.site.urls),
    path("api/schema/", SchemaView.as_view(), name="api-schema"),
    path("api/docs/", api_docs, name="api-docs"),
    path("api/v1/", include("agentclash.api_urls")),
    path("hooks/hosted/", include("runs.hosted.urls")),
    path("s/<str:token>/", run_views.shared_report, name="shared-report"),  # a run's shared report: no session (docs/runs.md)
    path("", include("workspaces.urls")),
    path("w/<slug:workspace_slug>/", include("infrastructure.urls")),
    path("w/<slug:workspace_slug>/secrets/", include("secrets_app.urls")),
    path("w/<slug:workspace_slug>/artifacts/", include("artifacts.urls")),
    path("w/<slug:workspace_slug>/packs/", include("packs.urls")),
    path("w/<slug:workspace_slug>/", include("runs.urls")),
    path("w/<slug:workspace_slug>/", include("scoring.urls")),
    path("w/<slug:workspace_slug>/", include("comparisons.urls")),
    path("w/<slug:workspace_slug>/", include("regression.urls")),
    path("w/<slug:workspace_slug>/", include("runs.search.urls")),
]

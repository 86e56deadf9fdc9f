"""What the dashboard shows: counts and recent activity, each a cheap query."""

from __future__ import annotations

from django.apps import apps

from workspaces.models import Workspace


def dashboard_context(*, workspace: Workspace) -> dict:
    Pack = apps.get_model("packs", "Pack")
    Run = apps.get_model("runs", "Run")
    return {
        "pack_count": Pack.objects.filter(workspace=workspace).count(),
        "run_count": Run.objects.filter(workspace=workspace).count(),
        "deployment_count": workspace.deployments.filter(status="active").count(),
        "member_count": workspace.memberships.count(),
        "recent_runs": Run.objects.filter(workspace=workspace).select_related("pack_version__pack").order_by("-created_at")[:5],
    }

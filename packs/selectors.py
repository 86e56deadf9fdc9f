"""Reads for packs. Every list is annotated in one query (no N+1; see the query-count tests)."""

from __future__ import annotations

from typing import Any

from django.db.models import Count, IntegerField, Max, OuterRef, QuerySet, Subquery, Value
from django.db.models.functions import Coalesce

from bundle import referenced_secrets
from core.errors import NotFound
from packs.models import Case, Challenge, InputSet, Pack, PackVersion
from secrets_app.models import WorkspaceSecret
from workspaces.access import object_get_for_workspace
from workspaces.models import Workspace


def pack_list(*, workspace: Workspace) -> QuerySet[Pack]:
    """Packs with ``versions_count`` and their latest version's id, number, mode and lifecycle."""
    latest = PackVersion.objects.filter(pack=OuterRef("pk")).order_by("-number")
    return (
        Pack.objects.filter(workspace=workspace)
        .annotate(
            versions_count=Count("versions", distinct=True),
            latest_number=Max("versions__number"),
            latest_version_id=Subquery(latest.values("pk")[:1]),
            latest_execution_mode=Subquery(latest.values("execution_mode")[:1]),
            latest_lifecycle=Subquery(latest.values("lifecycle_status")[:1]),
            latest_published_at=Subquery(latest.values("published_at")[:1]),
        )
        .order_by("name")
    )


def pack_get(*, workspace: Workspace, pk: Any) -> Pack:
    return object_get_for_workspace(Pack.objects.all(), workspace=workspace, pk=pk)


def pack_versions(*, pack: Pack) -> QuerySet[PackVersion]:
    challenges = Challenge.objects.filter(pack_version=OuterRef("pk")).values("pack_version").annotate(n=Count("pk")).values("n")[:1]
    cases = Case.objects.filter(pack_version=OuterRef("pk")).values("pack_version").annotate(n=Count("pk")).values("n")[:1]
    return (
        PackVersion.objects.filter(pack=pack)
        .select_related("published_by")
        .defer("manifest", "raw_yaml")
        .annotate(
            challenges_count=Coalesce(Subquery(challenges, output_field=IntegerField()), Value(0)),
            cases_count=Coalesce(Subquery(cases, output_field=IntegerField()), Value(0)),
        )
        .order_by("-number")
    )


def pack_version_get(*, workspace: Workspace, pk: Any) -> PackVersion:
    return object_get_for_workspace(PackVersion.objects.select_related("pack", "published_by", "workspace"), workspace=workspace, pk=pk)


def pack_versions_runnable(*, workspace: Workspace) -> QuerySet[PackVersion]:
    """Versions a run may be started on (for the runs app's picker)."""
    return (
        PackVersion.objects.filter(workspace=workspace, lifecycle_status=PackVersion.Lifecycle.RUNNABLE)
        .select_related("pack")
        .defer("manifest", "raw_yaml")
        .order_by("pack__name", "-number")
    )


def input_sets_of(*, version: PackVersion) -> QuerySet[InputSet]:
    return InputSet.objects.filter(pack_version=version).annotate(cases_count=Count("cases")).order_by("key")


def input_set_get(*, workspace: Workspace, pk: Any) -> InputSet:
    """An input set of this workspace (InputSet has no workspace column; it goes through its version).
    Another workspace's id, or one that does not exist, is :class:`NotFound` (the API's 404)."""
    try:
        return InputSet.objects.select_related("pack_version__pack").get(pack_version__workspace=workspace, pk=pk)
    except (InputSet.DoesNotExist, ValueError, TypeError):
        raise NotFound("Input set not found.") from None


def cases_of(*, input_set: InputSet) -> QuerySet[Case]:
    return Case.objects.filter(input_set=input_set).order_by("position")


def version_secret_status(*, version: PackVersion) -> list[dict[str, Any]]:
    """Which ``${secrets.X}`` the pack references and whether each is set — keys only, never values."""

    names = referenced_secrets(version.manifest)
    if not names:
        return []
    present = set(WorkspaceSecret.objects.filter(workspace_id=version.workspace_id, key__in=names).values_list("key", flat=True))
    return [{"key": name, "is_set": name in present} for name in names]


def pack_version_by_slug(*, workspace: Workspace, slug: str, number: int) -> PackVersion | None:
    return PackVersion.objects.filter(workspace=workspace, pack__slug=slug, number=number).select_related("pack").first()

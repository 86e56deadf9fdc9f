"""Runs in the admin: read-only history. Operators may cancel a run; nothing else changes here."""

from __future__ import annotations

from typing import Any, ClassVar

from django.conf import settings
from django.contrib import admin, messages
from django.db.models import F, OuterRef, QuerySet, Subquery, Sum
from django.db.models.functions import Coalesce
from django.http import HttpRequest
from django.template.defaultfilters import filesizeformat

from artifacts.models import Artifact
from core.admin import ReadOnlyAdmin
from runs.models import CaseRun, Lane, LaneStatusHistory, Run, RunArtifact, RunEvent, RunShare, RunStatus, RunStatusHistory, WorkspaceUsage
from runs.services import run_cancel


class LaneInline(admin.TabularInline):
    model = Lane
    fields: ClassVar[tuple[str, ...]] = ("lane_index", "label", "status", "failure_reason", "started_at", "finished_at")
    readonly_fields = fields
    extra = 0
    can_delete = False
    show_change_link = True

    def has_add_permission(self, request, obj=None) -> bool:
        return False


class RunStatusHistoryInline(admin.TabularInline):
    model = RunStatusHistory
    fields: ClassVar[tuple[str, ...]] = ("changed_at", "from_status", "to_status", "reason", "changed_by")
    readonly_fields = fields
    extra = 0
    can_delete = False

    def has_add_permission(self, request, obj=None) -> bool:
        return False


@admin.register(Run)
class RunAdmin(ReadOnlyAdmin):
    list_display = [
        "name",
        "workspace",
        "pack_version",
        "status",
        "mode",
        "repeats",
        "repeats_mode",
        "score_status",
        "created_by",
        "created_at",
    ]
    list_filter = ["status", "mode", "score_status", "workspace"]
    search_fields = ["name", "pack_version__pack__name"]
    date_hierarchy = "created_at"
    list_select_related = ["workspace", "pack_version__pack", "created_by"]
    inlines = [LaneInline, RunStatusHistoryInline]
    actions = ["cancel_runs"]

    @admin.action(description="Cancel selected runs")
    def cancel_runs(self, request, queryset) -> None:
        cancelled = 0
        for run in queryset:
            if not run.is_terminal:
                run_cancel(run=run, user=request.user)
                cancelled += 1
        self.message_user(request, f"Cancelled {cancelled} run(s).", messages.SUCCESS)


@admin.register(Lane)
class LaneAdmin(ReadOnlyAdmin):
    list_display = ["label", "run", "lane_index", "status", "started_at", "finished_at"]
    list_filter = ["status"]
    search_fields = ["label", "run__name"]
    list_select_related = ["run"]


@admin.register(LaneStatusHistory)
class LaneStatusHistoryAdmin(ReadOnlyAdmin):
    list_display = ["lane", "from_status", "to_status", "reason", "changed_at"]
    list_select_related = ["lane__run"]


@admin.register(CaseRun)
class CaseRunAdmin(ReadOnlyAdmin):
    list_display = ["case_key", "run", "lane", "trial", "status", "stop_reason", "attempt", "passed", "score", "duration_ms"]
    list_filter = ["status", "stop_reason", "score_status"]
    search_fields = ["case_key", "run__name"]
    list_select_related = ["run", "lane"]


@admin.register(RunEvent)
class RunEventAdmin(ReadOnlyAdmin):
    list_display = ["id", "run", "lane", "sequence_number", "event_type", "source", "case_key", "occurred_at"]
    list_filter = ["event_type", "source"]
    search_fields = ["event_id", "case_key"]
    list_select_related = ["run", "lane"]


@admin.register(RunStatusHistory)
class RunStatusHistoryAdmin(ReadOnlyAdmin):
    list_display = ["run", "from_status", "to_status", "reason", "changed_by", "changed_at"]
    list_select_related = ["run", "changed_by"]


# -- scoring history: scores, scorecards, comparisons and gate results -----------------------


@admin.register(RunArtifact)
class RunArtifactAdmin(ReadOnlyAdmin):
    list_display = ("id", "workspace", "run", "artifact", "attached_by", "attached_at")
    list_select_related = ("workspace", "run", "artifact", "attached_by")
    search_fields = ("artifact__name",)


@admin.register(RunShare)
class RunShareAdmin(ReadOnlyAdmin):
    """Share links of run reports: visible to operators (never their tokens: only a hash is kept);
    revoking is the workspace's job (run page or API), so it is audit-logged."""

    list_display = ["pk", "run", "workspace", "created_by", "created_at", "expires_at", "revoked_at", "view_count"]
    list_filter = ["workspace"]
    list_select_related = ["run", "workspace", "created_by"]
    exclude = ["token_hash"]


def _sum_of(queryset: QuerySet[Any], field: str) -> Coalesce:
    """The per-workspace total of ``field`` over ``queryset`` (rows with a ``workspace`` to match), 0 for none."""
    total = queryset.filter(workspace=OuterRef("pk")).order_by().values("workspace").annotate(total=Sum(field)).values("total")
    return Coalesce(Subquery(total), 0)


@admin.register(WorkspaceUsage)
class WorkspaceUsageAdmin(ReadOnlyAdmin):
    """What each workspace stores against the quotas (operator settings, docs/operations.md "Quotas")."""

    list_display = ["name", "slug", "artifacts", "artifact_quota", "events_running", "hosted_event_quota", "event_quota"]
    search_fields = ["name", "slug"]
    fields: ClassVar[tuple[str, ...]] = list_display  # type: ignore[assignment]
    readonly_fields = fields

    def get_queryset(self, request: HttpRequest) -> QuerySet[Any]:
        running = CaseRun.objects.filter(run__status=RunStatus.RUNNING).annotate(workspace=F("run__workspace"))
        return (
            super()
            .get_queryset(request)
            .annotate(
                artifact_bytes=_sum_of(Artifact.objects.all(), "size_bytes"),
                hosted_bytes=_sum_of(running, "hosted_bytes"),
            )
        )

    @admin.display(description="artifacts stored", ordering="artifact_bytes")
    def artifacts(self, obj: Any) -> str:
        return filesizeformat(obj.artifact_bytes)

    @admin.display(description="of (ARTIFACT_BYTES_PER_WORKSPACE)")
    def artifact_quota(self, obj: Any) -> str:
        return _share(obj.artifact_bytes, settings.ARTIFACT_BYTES_PER_WORKSPACE)

    @admin.display(description="events stored by running runs (hosted and native)", ordering="hosted_bytes")
    def events_running(self, obj: Any) -> str:
        return filesizeformat(obj.hosted_bytes)

    @admin.display(description="of (HOSTED_EVENT_BYTES_PER_WORKSPACE)")
    def hosted_event_quota(self, obj: Any) -> str:
        return _share(obj.hosted_bytes, settings.HOSTED_EVENT_BYTES_PER_WORKSPACE)

    @admin.display(description="of (EVENT_BYTES_PER_WORKSPACE)")
    def event_quota(self, obj: Any) -> str:
        return _share(obj.hosted_bytes, settings.EVENT_BYTES_PER_WORKSPACE)


def _share(used: int, limit: int) -> str:
    return f"{filesizeformat(limit)} ({100 * used / limit:.1f} % used)" if limit else "no limit"

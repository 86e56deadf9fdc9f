"""Read-only admin for scoring history: scores, scorecards, comparisons and gate results.

Imported from runs/admin.py (one line) so Django's admin autodiscovery registers it.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from runs.models import CaseScore, Comparison, GateResult, LaneScorecard, RunScorecard


class ReadOnlyAdmin(admin.ModelAdmin):
    """History must not change: no add, no edit, no delete (superusers included)."""

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(CaseScore)
class CaseScoreAdmin(ReadOnlyAdmin):
    list_display = ("id", "case_run", "lane", "passed", "overall_score", "validity", "created_at")
    list_filter = ("passed", "validity")
    list_select_related = ("case_run__lane__run", "lane__run")
    search_fields = ("case_run__case_key",)


@admin.register(LaneScorecard)
class LaneScorecardAdmin(ReadOnlyAdmin):
    list_display = ("id", "lane", "overall_score", "pass_rate", "passed", "validity", "created_at")
    list_filter = ("passed", "validity")
    list_select_related = ("lane__run",)


@admin.register(RunScorecard)
class RunScorecardAdmin(ReadOnlyAdmin):
    list_display = ("id", "run", "winner_lane", "created_at")
    list_select_related = ("run", "winner_lane__run")


@admin.register(Comparison)
class ComparisonAdmin(ReadOnlyAdmin):
    list_display = ("id", "workspace", "baseline_run", "candidate_run", "status", "reason_code", "created_at")
    list_filter = ("status", "reason_code")
    list_select_related = ("workspace", "baseline_run", "candidate_run")
    search_fields = ("fingerprint",)


@admin.register(GateResult)
class GateResultAdmin(ReadOnlyAdmin):
    list_display = ("id", "workspace", "comparison", "verdict", "reason_code", "created_at")
    list_filter = ("verdict",)
    list_select_related = ("workspace", "comparison")
    search_fields = ("policy_fingerprint", "reason_code")

"""Scores in the admin: read-only history."""

from __future__ import annotations

from django.contrib import admin

from core.admin import ReadOnlyAdmin
from scoring.models import CaseScore, LaneScorecard, RunScorecard


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

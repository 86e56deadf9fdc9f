"""Comparisons and gate verdicts in the admin: read-only history."""

from __future__ import annotations

from django.contrib import admin

from comparisons.models import Comparison, GateResult
from core.admin import ReadOnlyAdmin


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

"""Regression suites and cases in the admin: read-only (pages and API change them through services)."""

from __future__ import annotations

from django.contrib import admin

from core.admin import ReadOnlyAdmin
from regression.models import RegressionCase, RegressionSuite


@admin.register(RegressionSuite)
class RegressionSuiteAdmin(ReadOnlyAdmin):
    list_display = ("id", "workspace", "name", "pack", "created_at")
    list_select_related = ("workspace", "pack")
    search_fields = ("name",)


@admin.register(RegressionCase)
class RegressionCaseAdmin(ReadOnlyAdmin):
    list_display = ("id", "workspace", "suite", "title", "status", "severity", "source_run", "created_at")
    list_filter = ("status", "severity")
    list_select_related = ("workspace", "suite", "source_run")
    search_fields = ("title", "case_key")

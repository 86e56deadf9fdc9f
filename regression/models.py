"""Regression suites and the failed cases promoted into them (tables kept from runs/)."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class RegressionSuite(models.Model):
    """A workspace's named set of regression cases for one source pack (docs/regression-suites.md)."""

    workspace = models.ForeignKey("workspaces.Workspace", on_delete=models.CASCADE, related_name="regression_suites")
    pack = models.ForeignKey("packs.Pack", on_delete=models.RESTRICT, related_name="regression_suites")
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    # Archived: kept with its cases and their run history, but offered to no new run or promote.
    archived_at = models.DateTimeField(null=True, blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "runs_regressionsuite"  # moved out of runs/ with its table (docs/architecture.md)
        ordering = ["name", "id"]
        constraints = [models.UniqueConstraint(fields=["workspace", "name"], name="uniq_regression_suite_name")]

    def __str__(self) -> str:
        return self.name


class RegressionCase(models.Model):
    """A failed case promoted into a suite: a snapshot of the case plus where it failed.

    ``payload`` is the source ``packs.Case`` payload as it was at promote time (inputs,
    expectations, assets…); it wins over any Case row when the case is staged and scored.
    """

    class Status(models.TextChoices):
        PROPOSED = "proposed", "Proposed"
        ACTIVE = "active", "Active"
        ARCHIVED = "archived", "Archived"

    class Severity(models.TextChoices):
        BLOCKING = "blocking", "Blocking"
        WARNING = "warning", "Warning"
        INFO = "info", "Info"

    suite = models.ForeignKey(RegressionSuite, on_delete=models.CASCADE, related_name="cases")
    workspace = models.ForeignKey("workspaces.Workspace", on_delete=models.CASCADE, related_name="+")
    title = models.CharField(max_length=200)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PROPOSED, db_index=True)
    severity = models.CharField(max_length=16, choices=Severity.choices, default=Severity.BLOCKING)
    challenge_key = models.CharField(max_length=200)
    case_key = models.CharField(max_length=200, help_text="The source case's key in its pack.")
    item_key = models.CharField(max_length=200, blank=True)
    payload = models.JSONField(default=dict, help_text="The source case as it was at promote time.")
    source_case = models.ForeignKey("packs.Case", on_delete=models.RESTRICT, related_name="+")
    source_run = models.ForeignKey("runs.Run", on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    source_lane = models.ForeignKey("runs.Lane", on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    source_case_run = models.ForeignKey("runs.CaseRun", on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    source_first_sequence = models.PositiveBigIntegerField(null=True, blank=True)
    source_last_sequence = models.PositiveBigIntegerField(null=True, blank=True)
    failure_summary = models.TextField(blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    status_changed_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    status_changed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "runs_regressioncase"  # moved out of runs/ with its table (docs/architecture.md)
        ordering = ["suite", "id"]
        constraints = [
            models.CheckConstraint(condition=models.Q(status__in=["proposed", "active", "archived"]), name="regression_case_status_valid"),
            models.CheckConstraint(condition=models.Q(severity__in=["blocking", "warning", "info"]), name="regression_case_severity_valid"),
            # A case run promoted into a suite once, however many promotes race (regression_case_promote).
            models.UniqueConstraint(
                fields=["suite", "source_case_run"], condition=models.Q(source_case_run__isnull=False), name="uniq_regression_case_source"
            ),
        ]

    def __str__(self) -> str:
        return self.title

    @property
    def run_case_key(self) -> str:
        """The ``CaseRun.case_key`` it runs under: distinct from every pack case key of a lane."""
        return f"regression/{self.pk}/{self.case_key}"[:200]

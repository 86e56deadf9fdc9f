"""Comparisons of two lanes and the release-gate verdicts on them (tables kept from runs/)."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class Comparison(models.Model):
    workspace = models.ForeignKey("workspaces.Workspace", on_delete=models.CASCADE, related_name="comparisons")
    baseline_run = models.ForeignKey("runs.Run", on_delete=models.CASCADE, related_name="+")
    candidate_run = models.ForeignKey("runs.Run", on_delete=models.CASCADE, related_name="+")
    baseline_lane = models.ForeignKey("runs.Lane", on_delete=models.CASCADE, related_name="+")
    candidate_lane = models.ForeignKey("runs.Lane", on_delete=models.CASCADE, related_name="+")
    status = models.CharField(max_length=32)  # comparable | not_comparable
    reason_code = models.CharField(max_length=64, blank=True)
    fingerprint = models.CharField(max_length=64)
    summary = models.JSONField(default=dict)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "runs_comparison"  # moved out of runs/ with its table (docs/architecture.md)
        ordering = ["-created_at", "-id"]
        constraints = [models.UniqueConstraint(fields=["workspace", "fingerprint"], name="uniq_comparison_fingerprint")]

    def __str__(self) -> str:
        return f"comparison {self.pk}: run {self.baseline_run_id} vs run {self.candidate_run_id}"


class GateResult(models.Model):
    comparison = models.ForeignKey(Comparison, on_delete=models.CASCADE, related_name="gate_results")
    workspace = models.ForeignKey("workspaces.Workspace", on_delete=models.CASCADE, related_name="gate_results")
    verdict = models.CharField(max_length=32)  # pass | warn | fail | insufficient_evidence
    reason_code = models.CharField(max_length=64, blank=True)
    summary = models.TextField(blank=True)
    policy_snapshot = models.JSONField(default=dict)
    policy_fingerprint = models.CharField(max_length=64)
    details = models.JSONField(default=dict)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "runs_gateresult"  # moved out of runs/ with its table (docs/architecture.md)
        ordering = ["-created_at", "-id"]
        # One verdict per policy per comparison: concurrent evaluations return the same row.
        constraints = [models.UniqueConstraint(fields=["comparison", "policy_fingerprint"], name="uniq_gate_result_policy")]

    def __str__(self) -> str:
        return f"{self.verdict} ({self.reason_code})"

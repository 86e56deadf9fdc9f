"""Scores: per-case verdicts, lane scorecards and run scorecards (tables kept from runs/)."""

from __future__ import annotations

from django.db import models


class CaseScore(models.Model):
    """Per-case verdicts (the reference only scores per lane; we do both)."""

    case_run = models.OneToOneField("runs.CaseRun", on_delete=models.CASCADE, related_name="case_score")
    lane = models.ForeignKey("runs.Lane", on_delete=models.CASCADE, related_name="case_scores")
    passed = models.BooleanField(null=True)
    overall_score = models.FloatField(null=True)
    validity = models.CharField(max_length=16, blank=True)
    document = models.JSONField(default=dict)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "runs_casescore"  # moved out of runs/ with its table (docs/architecture.md)

    def __str__(self) -> str:
        return f"score of {self.case_run_id}"


class LaneScorecard(models.Model):
    lane = models.OneToOneField("runs.Lane", on_delete=models.CASCADE, related_name="scorecard")
    overall_score = models.FloatField(null=True)
    pass_rate = models.FloatField(null=True)
    passed = models.BooleanField(null=True)
    validity = models.CharField(max_length=16, blank=True)
    document = models.JSONField(default=dict)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "runs_lanescorecard"  # moved out of runs/ with its table (docs/architecture.md)

    def __str__(self) -> str:
        return f"scorecard of lane {self.lane_id}"


class RunScorecard(models.Model):
    run = models.OneToOneField("runs.Run", on_delete=models.CASCADE, related_name="scorecard")
    winner_lane = models.ForeignKey("runs.Lane", on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    document = models.JSONField(default=dict)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "runs_runscorecard"  # moved out of runs/ with its table (docs/architecture.md)

    def __str__(self) -> str:
        return f"scorecard of run {self.run_id}"

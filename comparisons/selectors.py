"""Reads for comparisons and gates: list queries built so a page costs a fixed number of queries."""

from __future__ import annotations

from django.db.models import OuterRef, QuerySet, Subquery

from comparisons.models import Comparison, GateResult
from workspaces.models import Workspace


def comparison_list(*, workspace: Workspace, summaries: bool = False) -> QuerySet[Comparison]:
    """The workspace's comparisons, newest first, with their latest verdict. ``summaries``: with the
    stored summaries, which lists leave out (with trials a summary holds every case run's outcome)."""
    latest = GateResult.objects.filter(comparison=OuterRef("pk")).order_by("-created_at", "-id")
    rows = Comparison.objects.filter(workspace=workspace)
    return (
        (rows if summaries else rows.defer("summary"))
        .select_related("baseline_run", "candidate_run", "baseline_lane", "candidate_lane")
        .annotate(latest_verdict=Subquery(latest.values("verdict")[:1]), latest_reason=Subquery(latest.values("reason_code")[:1]))
        .order_by("-created_at", "-id")
    )


def gate_list(*, workspace: Workspace) -> QuerySet[GateResult]:
    return (
        GateResult.objects.filter(workspace=workspace)
        .select_related(
            "comparison__baseline_run", "comparison__candidate_run", "comparison__baseline_lane", "comparison__candidate_lane", "created_by"
        )
        .defer("comparison__summary")  # not shown; with trials it holds every case run's outcome
        .order_by("-created_at", "-id")
    )

"""The failures review as JSON (the API) and as rows for the page."""

from __future__ import annotations

from typing import TypedDict

from regression.failures.classify import CLASSES, SEVERITIES, FailedDimension, FailedValidator
from regression.failures.selectors import CaseFailure, Cluster, FailureReview


class CheckOut(TypedDict):
    key: str
    label: str
    reason: str
    event_id: str | None


class CaseFailureOut(TypedDict):
    case_run_id: int
    case_key: str
    lane_id: int
    lane_label: str
    failure_class: str
    severity: str
    reason: str
    checks: list[CheckOut]
    failed_validators: list[FailedValidator]
    failed_dimensions: list[FailedDimension]
    replay_url: str
    evidence_event_id: str | None
    evidence_url: str


class ClusterOut(TypedDict):
    fingerprint: str
    title: str
    failure_class: str
    severity: str
    case_count: int
    lanes: list[str]
    failed_validators: list[str]  # labels
    failed_dimensions: list[str]  # keys
    cases: list[CaseFailureOut]


class ReviewCounts(TypedDict):
    failed_cases: int
    passed_cases_with_failed_checks: int
    clusters: int
    cancelled_cases: int
    cases_awaiting_score: int
    by_class: dict[str, int]
    by_severity: dict[str, int]


# "class" is a keyword, hence the functional syntax.
ReviewFilters = TypedDict("ReviewFilters", {"lane": int | None, "class": str | None, "cluster": str | None, "severity": str | None})


class ReviewOut(TypedDict):
    """The failures review API's body (``RunFailuresApi.OutputSerializer`` documents it)."""

    run_id: int
    run_status: str
    summary: ReviewCounts
    filters: ReviewFilters
    shown_cases: int
    clusters: list[ClusterOut]


class FilterChoices(TypedDict):
    lanes: list[tuple[int, str]]
    classes: list[tuple[str, str]]
    severities: list[tuple[str, str]]
    clusters: list[tuple[str, str]]  # (fingerprint, title with its case count)


def case_json(case: CaseFailure) -> CaseFailureOut:
    failure = case.failure
    return {
        "case_run_id": case.case_run_id,
        "case_key": case.case_key,
        "lane_id": case.lane_id,
        "lane_label": case.lane_label,
        "failure_class": failure.failure_class,
        "severity": failure.severity,
        "reason": failure.reason,
        "checks": [{"key": c.key, "label": c.label, "reason": c.reason, "event_id": c.event_id or None} for c in failure.checks],
        "failed_validators": [FailedValidator(**v) for v in failure.failed_validators],
        "failed_dimensions": [FailedDimension(**d) for d in failure.failed_dimensions],
        "replay_url": case.replay_url,
        "evidence_event_id": failure.evidence_event_id or None,
        "evidence_url": case.evidence_url,
    }


def cluster_json(cluster: Cluster) -> ClusterOut:
    return {
        "fingerprint": cluster.fingerprint,
        "title": cluster.title,
        "failure_class": cluster.failure_class,
        "severity": cluster.severity,
        "case_count": len(cluster.cases),
        "lanes": cluster.lanes,
        "failed_validators": cluster.failed_validators,
        "failed_dimensions": cluster.failed_dimensions,
        "cases": [case_json(c) for c in cluster.cases],
    }


def review_json(review: FailureReview) -> ReviewOut:
    filters = review.filters
    return {
        "run_id": review.run.pk,
        "run_status": review.run.status,
        "summary": {
            "failed_cases": review.failed_cases,
            "passed_cases_with_failed_checks": review.info_cases,
            "clusters": len(review.all_clusters),
            "cancelled_cases": review.cancelled_cases,
            "cases_awaiting_score": review.pending_cases,
            "by_class": {key: n for key, _, n in review.by_class},
            "by_severity": {key: n for key, _, n in review.by_severity},
        },
        "filters": {
            "lane": filters.lane,
            "class": filters.failure_class or None,
            "cluster": filters.cluster or None,
            "severity": filters.severity or None,
        },
        "shown_cases": review.shown_cases,
        "clusters": [cluster_json(c) for c in review.clusters],
    }


def filter_choices(review: FailureReview) -> FilterChoices:
    """The page's filter selects: every lane, class, severity and cluster of the unfiltered review."""
    return {
        "lanes": review.lanes,
        "classes": list(CLASSES.items()),
        "severities": list(SEVERITIES.items()),
        "clusters": [(c.fingerprint, f"{c.title} ({len(c.cases)})") for c in review.all_clusters],
    }

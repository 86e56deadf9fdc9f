"""The failures review as JSON (the API) and as rows for the page."""

from __future__ import annotations

from typing import Any

from regression.failures.classify import CLASSES, SEVERITIES
from regression.failures.selectors import CaseFailure, Cluster, FailureReview

JSON = Any


def case_json(case: CaseFailure) -> dict[str, JSON]:
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
        "failed_validators": [dict(v) for v in failure.failed_validators],
        "failed_dimensions": [dict(d) for d in failure.failed_dimensions],
        "replay_url": case.replay_url,
        "evidence_event_id": failure.evidence_event_id or None,
        "evidence_url": case.evidence_url,
    }


def cluster_json(cluster: Cluster) -> dict[str, JSON]:
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


def review_json(review: FailureReview) -> dict[str, JSON]:
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


def filter_choices(review: FailureReview) -> dict[str, JSON]:
    """The page's filter selects: every lane, class, severity and cluster of the unfiltered review."""
    return {
        "lanes": review.lanes,
        "classes": list(CLASSES.items()),
        "severities": list(SEVERITIES.items()),
        "clusters": [(c.fingerprint, f"{c.title} ({len(c.cases)})") for c in review.all_clusters],
    }

"""The failures review page: a run's failed cases in clusters, filterable (docs/failures-review.md)."""

from __future__ import annotations

from urllib.parse import urlencode

from django.http import HttpResponse
from django.shortcuts import render

from regression.failures.presenters import filter_choices
from regression.failures.selectors import FailureFilterError, FailureReview, failure_review
from runs import lookups
from workspaces.access import WorkspaceRequest, workspace_view

CASES_PER_CLUSTER = 20  # on the page; the cluster filter shows all of one cluster (the API always does)
CASES_IN_ONE_CLUSTER = 1000


@workspace_view()
def run_failures(request: WorkspaceRequest, run_id: int) -> HttpResponse:
    run = lookups.run_get(workspace=request.workspace, pk=run_id)
    try:
        review = failure_review(run=run, query=request.GET)
    except FailureFilterError as exc:
        unfiltered = failure_review(run=run)
        context = {"run": run, "filter_error": exc, "review": unfiltered}
        context.update(_page_context(unfiltered))
        return render(request, "regression/failures/review.html", context, status=400)
    context = {"run": run, "review": review, "filter_error": None}
    context.update(_page_context(review))
    return render(request, "regression/failures/review.html", context)


def _page_context(review: FailureReview) -> dict[str, object]:
    limit = CASES_IN_ONE_CLUSTER if review.filters.cluster else CASES_PER_CLUSTER
    clusters = [
        {
            "cluster": cluster,
            "cases": cluster.cases[:limit],
            "hidden": max(0, len(cluster.cases) - limit),
            "only_url": "?" + urlencode(review.filters.query(cluster=cluster.fingerprint)),
        }
        for cluster in review.clusters
    ]
    return {"clusters": clusters, "choices": filter_choices(review), "filters": review.filters}

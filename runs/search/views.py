"""The search page: runs, packs and deployments whose names match."""

from __future__ import annotations

from django.http import HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from runs.search import selectors
from workspaces.access import WorkspaceRequest, workspace_view


@workspace_view()
@require_GET
def results(request: WorkspaceRequest) -> HttpResponse:
    query = request.GET.get("q", "").strip()[:200]
    found = selectors.search(workspace=request.workspace, query=query)
    return render(request, "runs/search.html", {"found": found, "search_query": query, "limit": selectors.LIMIT})

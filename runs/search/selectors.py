"""Find runs, packs and deployments by name: one query per kind, each capped."""

from __future__ import annotations

import dataclasses

from django.db.models import Q

from infrastructure.models import AgentDeployment
from packs.models import Pack
from runs.models import Lane, Run
from workspaces.models import Workspace

LIMIT = 25


@dataclasses.dataclass
class SearchResults:
    query: str
    runs: list[Run]
    packs: list[Pack]
    deployments: list[AgentDeployment]

    @property
    def total(self) -> int:
        return len(self.runs) + len(self.packs) + len(self.deployments)


def search(*, workspace: Workspace, query: str, limit: int = LIMIT) -> SearchResults:
    """Case-insensitive substring match on names (and slugs, models, agents); ``#12`` finds run 12."""
    query = query.strip()
    if not query:
        return SearchResults(query, [], [], [])
    number = query.lstrip("#")
    run_filter = (
        Q(name__icontains=query)
        | Q(pack_version__pack__name__icontains=query)
        | Q(pk__in=Lane.objects.filter(workspace=workspace, label__icontains=query).values("run_id"))
    )
    if number.isdigit():
        run_filter |= Q(pk=int(number))
    runs = list(
        Run.objects.filter(run_filter, workspace=workspace).select_related("pack_version__pack").order_by("-created_at", "-id")[:limit]
    )
    packs = list(Pack.objects.filter(Q(name__icontains=query) | Q(slug__icontains=query), workspace=workspace).order_by("name")[:limit])
    deployments = list(
        AgentDeployment.objects.filter(Q(name__icontains=query) | Q(model__icontains=query), workspace=workspace)
        .select_related("provider_account", "runtime_profile")
        .order_by("name")[:limit]
    )
    return SearchResults(query, runs, packs, deployments)

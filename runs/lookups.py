"""The run family's shared lookups: a run of a workspace, a case of a run, a model call of a case,
a run's case counts. The lookups raise Http404 like the access helpers they are (workspaces/access.py):
views fetch objects through them; services and selectors never raise it.

They sit in the runs record layer (docs/architecture.md), so scoring, regression and the run
pages resolve runs the same way.
"""

from __future__ import annotations

from typing import Any

from django.db.models import Count
from django.http import Http404

from engine import events as ev
from runs.models import CaseRun, CaseStatus, Run, RunEvent, RunShare
from workspaces.access import object_get_for_workspace
from workspaces.models import Workspace

CASE_STATUSES = [s.value for s in CaseStatus]


def run_get(*, workspace: Workspace, pk: Any) -> Run:
    return object_get_for_workspace(Run.objects.select_related("pack_version__pack", "input_set", "created_by"), workspace=workspace, pk=pk)


def case_run_get(*, run: Run, pk: Any) -> CaseRun:
    """A case of this run (the run was already resolved through the access helper), or 404."""
    try:
        return CaseRun.objects.select_related("lane", "run").get(run=run, pk=int(pk))
    except (CaseRun.DoesNotExist, TypeError, ValueError):
        raise Http404("Case not found") from None


def run_share_get(*, run: Run, pk: Any) -> RunShare:
    """A share link of this run (the run was already resolved through the access helper), or 404."""
    try:
        return RunShare.objects.select_related("run__workspace").get(run=run, pk=int(pk))
    except (RunShare.DoesNotExist, TypeError, ValueError):
        raise Http404("Share link not found") from None


def run_share_by_token(*, token: str) -> RunShare | None:
    """The active link a public token names; None when it is unknown, revoked or expired alike."""
    if not token or len(token) > 200:
        return None
    share = RunShare.objects.select_related("run__workspace", "run__pack_version__pack").filter(token_hash=RunShare.hash(token)).first()
    return share if share is not None and share.is_active else None


def case_counts(*, run: Run) -> dict[str, int]:
    rows = dict(CaseRun.objects.filter(run=run).values_list("status").annotate(n=Count("pk")).values_list("status", "n"))
    counts = {s: rows.get(s, 0) for s in CASE_STATUSES}
    counts["total"] = sum(rows.values())
    return counts


def model_call_get(*, case_run: CaseRun, pk: Any) -> RunEvent:
    try:
        return RunEvent.objects.get(case_run=case_run, event_type=ev.MODEL_CALL_STARTED, pk=int(pk))
    except (RunEvent.DoesNotExist, TypeError, ValueError):
        raise Http404("Model call not found") from None

"""The run family's shared lookups: a run of a workspace, a case of a run, a model call of a case,
a run's case counts. The lookups raise Http404 like the access helpers they are (workspaces/access.py):
views fetch objects through them; services and selectors never raise it.

They sit in the runs record layer (docs/architecture.md), so scoring, regression and the run
pages resolve runs the same way.
"""

from __future__ import annotations

from typing import Any

from django.db.models import Count, Q
from django.http import Http404

from engine import events as ev
from engine.modes.case import STOP_CANCELLED
from runs.models import CaseRun, CaseStatus, Run, RunEvent, RunShare
from workspaces.access import object_get_for_workspace
from workspaces.models import Workspace

CASE_STATUSES = [s.value for s in CaseStatus]


def cancelled_q(prefix: str = "") -> Q:
    """Cancelled cases, counted apart everywhere: the agent did not fail them (a case stopped by a
    cancel keeps stop reason ``cancelled`` even when its status is ``completed``)."""
    return Q(**{f"{prefix}status": CaseStatus.CANCELLED}) | Q(**{f"{prefix}stop_reason": STOP_CANCELLED})


def failed_q(prefix: str = "") -> Q:
    """Failed cases, one meaning on every page (run header, lane cards, runs list, failures
    review): not passed by the scorer, or stopped by an error, and not cancelled."""
    return (Q(**{f"{prefix}status": CaseStatus.FAILED}) | Q(**{f"{prefix}passed": False})) & ~cancelled_q(prefix)


def tally_annotations(prefix: str = "") -> dict[str, Count]:
    """Counts of one meaning for a queryset of runs or lanes (``prefix`` "case_runs__") or the
    aggregate of a run's case runs (no prefix): ``passed``, ``failed``, ``cancelled``, ``ran``
    (finished and not cancelled) and ``total``."""
    field = prefix.removesuffix("__") or "pk"
    finished = Q(**{f"{prefix}status__in": [CaseStatus.COMPLETED, CaseStatus.FAILED]}) & ~cancelled_q(prefix)
    return {
        "tally_passed": Count(field, filter=Q(**{f"{prefix}passed": True}) & ~cancelled_q(prefix)),
        "tally_failed": Count(field, filter=failed_q(prefix)),
        "tally_cancelled": Count(field, filter=cancelled_q(prefix)),
        "tally_ran": Count(field, filter=finished),
        "tally_total": Count(field),
    }


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
    """Case runs by status, and the tally every page shows (``tally_passed``, ``tally_failed``,
    ``tally_cancelled``, ``tally_ran``: see :func:`tally_annotations`)."""
    rows = dict(CaseRun.objects.filter(run=run).values_list("status").annotate(n=Count("pk")).values_list("status", "n"))
    counts = {s: rows.get(s, 0) for s in CASE_STATUSES}
    counts["total"] = sum(rows.values())
    counts.update(CaseRun.objects.filter(run=run).aggregate(**tally_annotations()))
    return counts


def model_call_get(*, case_run: CaseRun, pk: Any) -> RunEvent:
    try:
        return RunEvent.objects.get(case_run=case_run, event_type=ev.MODEL_CALL_STARTED, pk=int(pk))
    except (RunEvent.DoesNotExist, TypeError, ValueError):
        raise Http404("Model call not found") from None

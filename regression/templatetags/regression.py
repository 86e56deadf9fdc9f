"""``{% load regression %}``: the Promote form of a failed case and a run's regression coverage.

Template tags rather than view context so every page that shows a case (the replay, the
failures review) gets the same form from one place.
"""

from __future__ import annotations

from typing import Any

from django import template

from regression.models import RegressionSuite
from regression.selectors import run_regression_coverage
from runs.models import CaseRun, Run
from workspaces.access import can
from workspaces.models import Role

register = template.Library()


@register.inclusion_tag("regression/_promote.html", takes_context=True)
def regression_promote(context: dict[str, Any], case_run: CaseRun, run: Run) -> dict[str, Any]:
    request = context.get("request")
    membership = getattr(request, "membership", None)
    failed = case_run.passed is False or case_run.status == "failed"
    shown = failed and case_run.regression_case_id is None and can(membership, Role.MEMBER)
    suites = (
        list(
            RegressionSuite.objects.filter(
                workspace_id=run.workspace_id, pack_id=run.pack_version.pack_id, archived_at__isnull=True
            ).order_by("name")
        )
        if shown
        else []
    )
    return {"shown": shown, "suites": suites, "case_run": case_run, "run": run, "current_workspace": context.get("current_workspace"),
            "csrf_token": context.get("csrf_token")}  # fmt: skip


@register.inclusion_tag("regression/_coverage.html", takes_context=True)
def regression_coverage(context: dict[str, Any], run: Run, polled: bool = True) -> dict[str, Any]:
    """The run's coverage table; it polls its own partial while the page is live (``live``) unless
    the page refreshes it itself (``polled=False``: the run page's one poller)."""
    live = polled and bool(context.get("live", not run.is_terminal))
    return {"coverage": run_regression_coverage(run=run), "run": run, "current_workspace": context.get("current_workspace"), "live": live}


@register.inclusion_tag("regression/_promote_compact.html", takes_context=True)
def regression_promote_compact(context: template.Context, case_run_id: int, run: Run) -> dict[str, Any]:
    """A one-line Promote form for a list of cases (the failures review); the suites are read once per page."""
    request = context.get("request")
    allowed = can(getattr(request, "membership", None), Role.MEMBER)
    key = f"regression_suites:{run.pk}"
    if allowed and key not in context.render_context:
        context.render_context[key] = list(
            RegressionSuite.objects.filter(
                workspace_id=run.workspace_id, pack_id=run.pack_version.pack_id, archived_at__isnull=True
            ).order_by("name")
        )
    suites = context.render_context.get(key, []) if allowed else []
    return {"suites": suites, "case_run_id": case_run_id, "run": run, "current_workspace": context.get("current_workspace"),
            "csrf_token": context.get("csrf_token")}  # fmt: skip

"""``{% load regression %}``: the Promote form of a failed case and a run's regression coverage.

Template tags rather than view context so every page that shows a case (the replay, the
failures review) gets the same form from one place.
"""

from __future__ import annotations

from typing import Any

from django import template

from regression.models import RegressionCase, RegressionSuite
from regression.selectors import run_regression_coverage
from runs.models import CaseRun, Run
from workspaces.access import can
from workspaces.models import Role

register = template.Library()


def _cache(context: template.Context | dict[str, Any]) -> dict[str, Any]:
    """Reads shared by every row of a page. Kept on the request: each ``{% include %}`` renders
    with a fresh render context, so a cache there would be read again for every row."""
    request = context.get("request")
    return request.__dict__.setdefault("_regression_tags", {}) if request is not None else {}


def _suites(context: template.Context | dict[str, Any], run: Run) -> list[RegressionSuite]:
    """The suites a case of ``run`` can be promoted into, read once per page."""
    cache = _cache(context)
    key = f"regression_suites:{run.pk}"
    if key not in cache:
        cache[key] = list(
            RegressionSuite.objects.filter(
                workspace_id=run.workspace_id, pack_id=run.pack_version.pack_id, archived_at__isnull=True
            ).order_by("name")
        )
    suites: list[RegressionSuite] = cache[key]
    return suites


def _promoted(context: template.Context | dict[str, Any], run: Run) -> dict[int, RegressionCase]:
    """The run's case runs already kept as regression cases (case run id → its first case), read once per page."""
    cache = _cache(context)
    key = f"regression_promoted:{run.pk}"
    if key not in cache:
        found: dict[int, RegressionCase] = {}
        for case in RegressionCase.objects.filter(source_case_run__run=run).select_related("suite").order_by("pk"):
            found.setdefault(case.source_case_run_id or 0, case)
        cache[key] = found
    promoted: dict[int, RegressionCase] = cache[key]
    return promoted


@register.inclusion_tag("regression/_promote.html", takes_context=True)
def regression_promote(context: template.Context, case_run: CaseRun, run: Run) -> dict[str, Any]:
    request = context.get("request")
    membership = getattr(request, "membership", None)
    failed = case_run.passed is False or case_run.status == "failed"
    shown = failed and case_run.regression_case_id is None and can(membership, Role.MEMBER)
    promoted = _promoted(context, run).get(case_run.pk) if failed else None
    suites = _suites(context, run) if shown and promoted is None else []
    return {"shown": shown, "promoted": promoted, "suites": suites, "case_run": case_run, "run": run,
            "current_workspace": context.get("current_workspace"), "csrf_token": context.get("csrf_token")}  # fmt: skip


@register.inclusion_tag("regression/_coverage.html", takes_context=True)
def regression_coverage(context: dict[str, Any], run: Run, polled: bool = True) -> dict[str, Any]:
    """The run's coverage table; it polls its own partial while the page is live (``live``) unless
    the page refreshes it itself (``polled=False``: the run page's one poller)."""
    live = bool(context.get("live", not run.is_terminal))
    return {
        "coverage": run_regression_coverage(run=run),
        "run": run,
        "current_workspace": context.get("current_workspace"),
        "live": live,
        "polls": polled and live,
    }


@register.inclusion_tag("regression/_promote_compact.html", takes_context=True)
def regression_promote_compact(context: template.Context, case_run_id: int, run: Run) -> dict[str, Any]:
    """A one-line Promote form for a list of cases (the failures review), or where the case was
    kept when it already was; suites and promoted cases are read once per page."""
    request = context.get("request")
    allowed = can(getattr(request, "membership", None), Role.MEMBER)
    promoted = _promoted(context, run).get(case_run_id)
    return {"suites": _suites(context, run) if allowed and promoted is None else [], "promoted": promoted, "case_run_id": case_run_id,
            "run": run, "current_workspace": context.get("current_workspace"), "csrf_token": context.get("csrf_token"),
            "next": request.get_full_path() if request is not None else ""}  # fmt: skip


@register.simple_tag(takes_context=True)
def regression_promotable(context: template.Context, case_run_id: int, run: Run) -> bool:
    """Whether the failures review offers this case to the batch promote (a member, a suite, not kept yet)."""
    request = context.get("request")
    if not can(getattr(request, "membership", None), Role.MEMBER):
        return False
    return bool(_suites(context, run)) and case_run_id not in _promoted(context, run)


@register.simple_tag(takes_context=True)
def regression_suites(context: template.Context, run: Run) -> list[RegressionSuite]:
    """The suites the current member can promote this run's cases into (none for a viewer)."""
    request = context.get("request")
    return _suites(context, run) if can(getattr(request, "membership", None), Role.MEMBER) else []

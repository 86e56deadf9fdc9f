"""Reads for regression suites: access helpers, lists, the cases a run includes, coverage."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from django.db.models import Count, Exists, F, OuterRef, Q, QuerySet

from core.errors import DomainError, NotFound
from engine.scoring.documents import RegressionCaseRunResult
from packs.models import PackVersion
from regression.models import RegressionCase, RegressionSuite
from runs.models import CaseRun, CaseStatus, Lane, Run
from workspaces.access import object_get_for_workspace
from workspaces.models import Workspace

SCOPES = ("full", "suite_only")


def suite_list(*, workspace: Workspace) -> QuerySet[RegressionSuite]:
    return (
        RegressionSuite.objects.filter(workspace=workspace)
        .select_related("pack")
        .annotate(
            cases_total=Count("cases"),
            cases_active=Count("cases", filter=Q(cases__status=RegressionCase.Status.ACTIVE)),
            cases_proposed=Count("cases", filter=Q(cases__status=RegressionCase.Status.PROPOSED)),
            used_by_runs=Exists(CaseRun.objects.filter(regression_case__suite=OuterRef("pk"))),
        )
        .order_by(F("archived_at").asc(nulls_first=True), "name", "id")
    )


def suite_get(*, workspace: Workspace, pk: Any) -> RegressionSuite:
    """A suite of this workspace by user-supplied id; another workspace's is a 404."""
    return object_get_for_workspace(RegressionSuite.objects.select_related("pack"), workspace=workspace, pk=pk)


def case_get(*, workspace: Workspace, pk: Any) -> RegressionCase:
    return object_get_for_workspace(RegressionCase.objects.select_related("suite", "suite__pack"), workspace=workspace, pk=pk)


def case_list(*, suite: RegressionSuite, status: str = "") -> QuerySet[RegressionCase]:
    cases = RegressionCase.objects.filter(suite=suite).select_related("source_run", "source_lane")
    return cases.filter(status=status) if status in RegressionCase.Status.values else cases


def _ids(raw: Sequence[Any] | None, field: str) -> list[int]:
    ids: list[int] = []
    for value in raw or ():
        if isinstance(value, bool):
            raise DomainError(f"{field} takes ids: {value!r} is not one.", field=field)
        try:
            pk = int(value)
        except (TypeError, ValueError):
            raise DomainError(f"{field} takes ids: {value!r} is not one.", field=field) from None
        if pk not in ids:
            ids.append(pk)
    return ids


def _suites(workspace: Workspace, ids: list[int], version: PackVersion) -> list[RegressionSuite]:
    found = {s.pk: s for s in RegressionSuite.objects.filter(workspace=workspace, pk__in=ids)}
    missing = [pk for pk in ids if pk not in found]
    if missing:
        raise NotFound(f"Regression suite {missing[0]} not found in this workspace.", field="regression_suite_ids")
    for suite in found.values():
        if suite.pack_id != version.pack_id:
            raise DomainError(
                f"Regression suite “{suite.name}” belongs to another pack than this run's: leave it out.", field="regression_suite_ids"
            )
        if suite.archived_at is not None:
            raise DomainError(f"Regression suite “{suite.name}” is archived; restore it to run it.", field="regression_suite_ids")
    return [found[pk] for pk in ids]


def _explicit_cases(workspace: Workspace, ids: list[int], version: PackVersion, include_proposed: bool) -> list[RegressionCase]:
    found = {c.pk: c for c in RegressionCase.objects.filter(workspace=workspace, pk__in=ids).select_related("suite")}
    missing = [pk for pk in ids if pk not in found]
    if missing:
        raise NotFound(f"Regression case {missing[0]} not found in this workspace.", field="regression_case_ids")
    for case in found.values():
        if case.suite.pack_id != version.pack_id:
            raise DomainError(
                f"Regression case “{case.title}” belongs to another pack than this run's: leave it out.", field="regression_case_ids"
            )
        if case.status == RegressionCase.Status.ARCHIVED:
            raise DomainError(f"Regression case “{case.title}” is archived: activate it or leave it out.", field="regression_case_ids")
        if case.suite.archived_at is not None:
            raise DomainError(f"Regression case “{case.title}” is in the archived suite “{case.suite.name}”.", field="regression_case_ids")
        if case.status == RegressionCase.Status.PROPOSED and not include_proposed:
            raise DomainError(
                f"Regression case “{case.title}” is only proposed: activate it, or include proposed cases.", field="regression_case_ids"
            )
    return [found[pk] for pk in ids]


@dataclasses.dataclass(frozen=True)
class RunRegression:
    """What a new run includes besides (or instead of) the pack's cases."""

    scope: str
    cases: list[RegressionCase]

    @property
    def pack_cases(self) -> bool:
        return self.scope == "full"


def run_regression_resolve(
    *,
    workspace: Workspace,
    pack_version: PackVersion,
    suite_ids: Sequence[Any] | None,
    case_ids: Sequence[Any] | None,
    scope: str | None,
    include_proposed: bool,
) -> RunRegression:
    """The regression cases of a run request, checked against the run's pack version.

    Raises DomainError (a 400 naming the field), or NotFound for an id this workspace does not
    have.
    """
    scope = scope or "full"
    if scope not in SCOPES:
        raise DomainError(f"regression_scope must be one of {', '.join(SCOPES)}.", field="regression_scope")
    suites = _suites(workspace, _ids(suite_ids, "regression_suite_ids"), pack_version)
    statuses = [RegressionCase.Status.ACTIVE] + ([RegressionCase.Status.PROPOSED] if include_proposed else [])
    cases = list(RegressionCase.objects.filter(suite__in=suites, status__in=statuses).select_related("suite").order_by("suite__name", "id"))
    for case in _explicit_cases(workspace, _ids(case_ids, "regression_case_ids"), pack_version, include_proposed):
        if case.pk not in {c.pk for c in cases}:
            cases.append(case)
    if scope == "suite_only" and not cases:
        field = "regression_suite_ids" if suite_ids or not case_ids else "regression_case_ids"
        raise DomainError(
            "A suite_only run needs at least one active regression case (none selected): choose a suite with active cases.", field=field
        )
    keys = set(pack_version.challenges.values_list("key", flat=True))
    for case in cases:
        if case.challenge_key not in keys:
            raise DomainError(
                f"Regression case “{case.title}” (#{case.pk}) needs challenge {case.challenge_key!r}, "
                f"which pack version {pack_version.number} does not have.",
                field="regression_case_ids" if case.pk in (case_ids or ()) else "regression_suite_ids",
            )
    return RunRegression(scope=scope, cases=cases)


@dataclasses.dataclass(frozen=True)
class SuiteCoverage:
    suite_id: int
    suite_name: str
    cases: int
    passed: int
    failed: int
    pending: int


def _outcome(case_run: CaseRun) -> str:
    if case_run.passed is True:
        return "pass"
    if case_run.passed is False or case_run.status in (CaseStatus.FAILED, CaseStatus.CANCELLED):
        return "fail"
    return "pending"


def case_outcome(case_run: CaseRun) -> str:
    """pass | fail | pending: a regression case's result in one case run."""
    return _outcome(case_run)


def run_regression_coverage(*, run: Run) -> list[SuiteCoverage]:
    """Per suite: how many regression case runs the run has and how they came out (all lanes)."""
    rows = (
        CaseRun.objects.filter(run=run, regression_case__isnull=False)
        .select_related("regression_case__suite")
        .only("passed", "status", "regression_case__suite__name", "regression_case__suite_id")
    )
    by_suite: dict[int, dict[str, Any]] = {}
    for row in rows:
        assert row.regression_case is not None
        suite = row.regression_case.suite
        entry = by_suite.setdefault(suite.pk, {"name": suite.name, "cases": 0, "pass": 0, "fail": 0, "pending": 0})
        entry["cases"] += 1
        entry[_outcome(row)] += 1
    return [
        SuiteCoverage(pk, e["name"], e["cases"], e["pass"], e["fail"], e["pending"])
        for pk, e in sorted(by_suite.items(), key=lambda item: item[1]["name"])
    ]


def lane_regression_entries(*, lane: Lane) -> list[RegressionCaseRunResult] | None:
    """A lane's regression case results in the shape the gate reads (engine/scoring/gates.py), or None."""
    rows = list(
        CaseRun.objects.filter(lane=lane, regression_case__isnull=False)
        .select_related("regression_case")
        .only("case_key", "passed", "status", "regression_case__severity", "regression_case__suite_id")
    )
    if not rows:
        return None
    entries: list[RegressionCaseRunResult] = []
    for row in rows:
        assert row.regression_case is not None
        outcome = _outcome(row)
        entries.append(
            {
                "regression_case_id": row.regression_case.pk,
                "suite_id": row.regression_case.suite_id,
                "severity": row.regression_case.severity,
                "case_key": row.case_key,
                "outcome": outcome,
                "failed": outcome == "fail",
            }
        )
    return entries

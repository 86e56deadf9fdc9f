"""Writes for regression suites (docs/style.md §5): create a suite, promote a failed case, review it."""

from __future__ import annotations

import copy
from typing import Any

from django.db import transaction
from django.db.models import Max, Min, RestrictedError
from django.utils import timezone

from core.actors import actor_or_none
from core.errors import Conflict, DomainError, NotFound, full_clean
from core.writes import insert_or_conflict, insert_or_none
from packs.models import Pack
from regression.models import RegressionCase, RegressionSuite
from runs.models import CaseRun, CaseStatus, RunEvent
from workspaces.models import Workspace

# Which review moves are allowed: a proposed case is activated or archived, an archived one can
# come back, an active one can be retired.
TRANSITIONS: dict[str, frozenset[str]] = {
    RegressionCase.Status.PROPOSED: frozenset({RegressionCase.Status.ACTIVE, RegressionCase.Status.ARCHIVED}),
    RegressionCase.Status.ACTIVE: frozenset({RegressionCase.Status.ARCHIVED}),
    RegressionCase.Status.ARCHIVED: frozenset({RegressionCase.Status.ACTIVE}),
}
PROMOTE_STATUSES = (RegressionCase.Status.PROPOSED, RegressionCase.Status.ACTIVE)


@transaction.atomic
def regression_suite_create(*, workspace: Workspace, user: Any, pack: Pack, name: str, description: str = "") -> RegressionSuite:
    if pack.workspace_id != workspace.pk:
        raise NotFound("That pack is not in this workspace: choose one of its own packs.", field="pack_id")
    name = _suite_name(workspace.pk, name)
    suite = RegressionSuite(workspace=workspace, pack=pack, name=name, description=description or "", created_by=actor_or_none(user))
    full_clean(suite)
    insert_or_conflict(suite, field="name", message=f"A suite named “{name}” was just created by another request: choose another name.")
    return suite


def _suite_name(workspace_id: int, name: str, *, exclude: int | None = None) -> str:
    name = (name or "").strip()
    if not name:
        raise DomainError("Give the suite a name.", field="name")
    if len(name) > 200:
        raise DomainError("The name is longer than 200 characters: shorten it.", field="name")
    others = RegressionSuite.objects.filter(workspace_id=workspace_id, name=name)
    if (others.exclude(pk=exclude) if exclude is not None else others).exists():
        raise DomainError(f"A suite named “{name}” already exists: choose another name.", field="name")
    return name


@transaction.atomic
def regression_suite_update(
    *, suite: RegressionSuite, user: Any, name: str | None = None, description: str | None = None
) -> RegressionSuite:
    """Rename a suite or change its description (runs keep their case keys: they name cases, not suites)."""
    if name is not None:
        suite.name = _suite_name(suite.workspace_id, name, exclude=suite.pk)
    if description is not None:
        suite.description = description
    full_clean(suite)
    suite.save(update_fields=["name", "description", "updated_at"])
    return suite


@transaction.atomic
def regression_suite_set_archived(*, suite: RegressionSuite, user: Any, archived: bool) -> RegressionSuite:
    """Archive (no new run or promote is offered the suite; its cases and history stay) or restore."""
    if archived == (suite.archived_at is not None):
        return suite
    suite.archived_at = timezone.now() if archived else None
    suite.save(update_fields=["archived_at", "updated_at"])
    return suite


def suite_in_use(suite: RegressionSuite) -> bool:
    """Whether any run ran a case of the suite (its history must stay: archive it instead)."""
    return CaseRun.objects.filter(regression_case__suite=suite).exists()


@transaction.atomic
def regression_suite_delete(*, suite: RegressionSuite, user: Any) -> None:
    """Delete a suite that no run has used, with its cases; one that was run is refused (archive it)."""
    in_use = Conflict(
        f"Runs have run cases of “{suite.name}”: archive the suite instead, so their history stays.", field="suite_id", code="suite_in_use"
    )
    if suite_in_use(suite):
        raise in_use
    try:
        suite.delete()
    except RestrictedError:  # CaseRun.regression_case is RESTRICT: a run that slipped in is refused, not orphaned
        raise in_use from None


def _failure_summary(case_run: CaseRun) -> str:
    """One line in words for the suite page: how the case ended, its score, why it stopped."""
    parts = ["Failed" if case_run.status == CaseStatus.FAILED else "Did not pass"]
    if case_run.score is not None:
        parts.append(f"score {case_run.score:.2f}")
    if case_run.stop_reason and case_run.stop_reason != "completed":
        parts.append("stopped: " + case_run.stop_reason.replace("_", " "))
    if case_run.error:
        parts.append(case_run.error[:300])
    return "; ".join(parts)


def _is_failed(case_run: CaseRun) -> bool:
    return case_run.passed is False or case_run.status == "failed"


@transaction.atomic
def regression_case_promote(
    *,
    workspace: Workspace,
    user: Any,
    case_run: CaseRun,
    suite: RegressionSuite,
    status: str = RegressionCase.Status.PROPOSED,
    severity: str = RegressionCase.Severity.BLOCKING,
    title: str = "",
) -> tuple[RegressionCase, bool]:
    """A failed case run becomes a regression case of ``suite`` (a snapshot of its case).

    Promoting the same case run into the same suite again returns the existing case
    (``created`` False), so a retried CI job does not duplicate it.
    """
    if suite.workspace_id != workspace.pk or case_run.run.workspace_id != workspace.pk:
        raise NotFound("That suite or case is not in this workspace: choose a suite of this workspace.", field="suite_id")
    if suite.archived_at is not None:
        raise DomainError(f"Suite “{suite.name}” is archived; restore it to promote cases into it.", field="suite_id")
    if status not in PROMOTE_STATUSES:
        raise DomainError(f"status must be one of {', '.join(PROMOTE_STATUSES)}.", field="status")
    if severity not in RegressionCase.Severity.values:
        raise DomainError(f"severity must be one of {', '.join(RegressionCase.Severity.values)}.", field="severity")
    existing = RegressionCase.objects.filter(suite=suite, source_case_run=case_run).first()
    if existing is not None:
        return existing, False
    if case_run.regression_case_id is not None:
        raise DomainError("This case already is a regression case; review it in its suite.", field="case_run_id")
    if not _is_failed(case_run):
        raise DomainError("Only a failed case can be promoted (this one did not fail): choose a failed case.", field="case_run_id")
    source = case_run.case
    if source.pack_version.pack_id != suite.pack_id:
        raise DomainError(f"Suite “{suite.name}” is for another pack than this run's: choose a suite of this run's pack.", field="suite_id")
    events = RunEvent.objects.filter(case_run=case_run).aggregate(first=Min("sequence_number"), last=Max("sequence_number"))
    now = timezone.now()
    case = RegressionCase(
        suite=suite, workspace=workspace, title=(title or "").strip()[:200] or f"{source.case_key} (run {case_run.run_id})",
        status=status, severity=severity, challenge_key=source.challenge_key, case_key=source.case_key,
        item_key=source.item_key, payload=copy.deepcopy(case_run.case_payload), source_case=source,
        source_run=case_run.run, source_lane=case_run.lane, source_case_run=case_run,
        source_first_sequence=events["first"], source_last_sequence=events["last"],
        failure_summary=_failure_summary(case_run), created_by=actor_or_none(user),
        status_changed_by=actor_or_none(user), status_changed_at=now,
    )  # fmt: skip
    full_clean(case, exclude=["source_case_run"])
    if insert_or_none(case) is None:  # a concurrent promote of the same case run into the same suite won
        return RegressionCase.objects.get(suite=suite, source_case_run=case_run), False
    return case, True


@transaction.atomic
def regression_case_set_status(*, case: RegressionCase, user: Any, status: str) -> RegressionCase:
    """Activate or archive (compare-and-set: a concurrent review that got there first wins)."""
    if status not in RegressionCase.Status.values:
        raise DomainError(f"status must be one of {', '.join(RegressionCase.Status.values)}.", field="status")
    if status == case.status:
        return case
    if status not in TRANSITIONS[case.status]:
        allowed = " or ".join(sorted(TRANSITIONS[case.status]))
        raise DomainError(
            f"A {case.status} case cannot become {status} (it can become {allowed}).", field="status", code="invalid_transition"
        )
    changed = RegressionCase.objects.filter(pk=case.pk, status=case.status).update(
        status=status, status_changed_by=actor_or_none(user), status_changed_at=timezone.now()
    )
    if changed != 1:
        raise Conflict("Someone else changed this case meanwhile; reload it and review it again.", field="status")
    case.refresh_from_db()
    return case


@transaction.atomic
def regression_case_set_severity(*, case: RegressionCase, user: Any, severity: str) -> RegressionCase:
    if severity not in RegressionCase.Severity.values:
        raise DomainError(f"severity must be one of {', '.join(RegressionCase.Severity.values)}.", field="severity")
    case.severity = severity
    full_clean(case)
    case.save(update_fields=["severity"])
    return case

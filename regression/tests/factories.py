"""Test data for regression suites: a finished run with a failed case, a suite, a promoted case."""

from __future__ import annotations

from typing import Any

from regression.models import RegressionCase, RegressionSuite
from regression.services import regression_case_promote, regression_case_set_status, regression_suite_create
from runs import services
from runs.models import CaseRun, Run
from runs.tests.factories import make_deployment

WRONG = [{"submit": "no idea"}]


def failing_deployment(workspace: Any, name: str = "guesser") -> Any:
    return make_deployment(workspace, name=name, script=WRONG)


def finished_run(workspace: Any, user: Any, version: Any, deployment: Any, tasks: Any, **extra: Any) -> Run:
    run = services.run_create(workspace=workspace, user=user, pack_version=version, deployment_ids=[deployment.pk], **extra)
    tasks.drain()
    run.refresh_from_db()
    return run


def suite_for(workspace: Any, user: Any, version: Any, name: str = "smoke") -> RegressionSuite:
    return regression_suite_create(workspace=workspace, user=user, pack=version.pack, name=name)


def promoted(
    workspace: Any, user: Any, run: Run, suite: RegressionSuite, *, case_key: str = "case-1", active: bool = True, **extra: Any
) -> RegressionCase:
    case_run = CaseRun.objects.get(run=run, case_key=case_key)
    case, _ = regression_case_promote(workspace=workspace, user=user, case_run=case_run, suite=suite, **extra)
    if active:
        case = regression_case_set_status(case=case, user=user, status="active")
    return case

"""Identical writes sent at once, through a live server on PostgreSQL: never a 500, never a twin.

Each case fires the same request from several threads released together (real connections, each
request in its own database transaction). A create answers one 201 and 409s (or 400s for a
duplicate the check saw), an upsert or a repeat-safe endpoint answers the one row every time.
SQLite serialises writers, so the race these guard against needs PostgreSQL (skipped without it).
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest
import requests
from django.db import connection

from comparisons.models import GateResult
from comparisons.services import comparison_create
from conftest import require_or_skip
from infrastructure.models import AgentDeployment, ProviderAccount, RuntimeProfile
from regression.models import RegressionCase, RegressionSuite
from regression.tests.factories import finished_run
from runs.models import CaseRun, Run
from runs.tests.factories import make_deployment
from runs.tests.fixtures import *  # noqa: F403
from secrets_app.models import WorkspaceSecret
from workspaces.models import WorkspaceMembership
from workspaces.services import api_token_create
from workspaces.tests.factories import make_user

pytestmark = [pytest.mark.services, pytest.mark.django_db(transaction=True)]

THREADS = 8
SCRIPT = {"script": {"default": [{"submit": "answer"}]}}


@pytest.fixture(autouse=True)
def _postgresql_only() -> None:
    require_or_skip(connection.vendor == "postgresql", "PostgreSQL (DATABASE_URL=postgres://…): concurrent writers")


@pytest.fixture
def fire(live_server, admin, settings) -> Callable[..., list[requests.Response]]:
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "DEFAULT_THROTTLE_CLASSES": []}
    _, raw = api_token_create(user=admin, name="race")

    def send(method: str, path: str, body: dict[str, Any], headers: dict[str, str] | None = None) -> list[requests.Response]:
        barrier = threading.Barrier(THREADS)
        answers: list[requests.Response] = []
        lock = threading.Lock()

        def one() -> None:
            session = requests.Session()
            session.headers["Authorization"] = f"Bearer {raw}"
            barrier.wait(timeout=30)
            response = session.request(method, live_server.url + path, json=body, headers=headers, timeout=60)
            with lock:
                answers.append(response)

        threads = [threading.Thread(target=one) for _ in range(THREADS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=90)
        assert len(answers) == THREADS
        return answers

    return send


def statuses(answers: list[requests.Response]) -> Counter[int]:
    return Counter(response.status_code for response in answers)


def assert_one_created_rest_refused(answers: list[requests.Response], field: str) -> None:
    counts = statuses(answers)
    assert counts[201] == 1 and counts[201] + counts[409] + counts[400] == THREADS, [(r.status_code, r.text[:200]) for r in answers]
    for response in answers:
        if response.status_code in (400, 409):
            assert field in response.json()["error"].get("fields", {}), response.text


API = "/api/v1/workspaces/acme"


@pytest.mark.parametrize(
    "collection, model",
    [("provider-accounts", ProviderAccount), ("runtime-profiles", RuntimeProfile)],
)
def test_concurrent_identical_creates_make_one_row_and_409s(fire, workspace, collection, model):
    body = {
        "provider-accounts": {"name": "Twin", "provider_key": "scripted"},
        "runtime-profiles": {"name": "Twin", "execution_target": "native"},
    }[collection]
    answers = fire("POST", f"{API}/{collection}", body)
    assert_one_created_rest_refused(answers, "name")
    assert model.objects.filter(workspace=workspace, name="Twin").count() == 1


def test_concurrent_identical_deployments_make_one_row(fire, workspace):
    account = ProviderAccount.objects.create(workspace=workspace, name="acct", provider_key="scripted")
    profile = RuntimeProfile.objects.create(workspace=workspace, name="prof")
    body = {"name": "Twin", "provider_account_id": account.pk, "model": "m", "runtime_profile_id": profile.pk, "deployment_config": SCRIPT}
    answers = fire("POST", f"{API}/deployments", body)
    assert_one_created_rest_refused(answers, "name")
    assert AgentDeployment.objects.filter(workspace=workspace, name="Twin").count() == 1


def test_concurrent_suite_creates_make_one_suite(fire, workspace, pack_version):
    answers = fire("POST", f"{API}/regression-suites", {"pack_id": pack_version.pack_id, "name": "nightly"})
    assert_one_created_rest_refused(answers, "name")
    assert RegressionSuite.objects.filter(workspace=workspace, name="nightly").count() == 1


def test_concurrent_secret_puts_store_one_secret(fire, workspace):
    answers = fire("PUT", f"{API}/secrets/TWIN_KEY", {"value": "v1"})
    counts = statuses(answers)
    assert counts[201] == 1 and counts[200] == THREADS - 1, [(r.status_code, r.text[:200]) for r in answers]
    assert WorkspaceSecret.objects.filter(workspace=workspace, key="TWIN_KEY").count() == 1


def test_concurrent_member_adds_make_one_membership(fire, workspace):
    newcomer = make_user("newcomer")
    answers = fire("POST", f"{API}/members", {"username": "newcomer", "role": "viewer"})
    counts = statuses(answers)
    assert counts[202] == 1 and counts[202] + counts[400] + counts[409] == THREADS, [(r.status_code, r.text[:200]) for r in answers]
    assert WorkspaceMembership.objects.filter(workspace=workspace, user=newcomer).count() == 1


def test_concurrent_promotes_make_one_regression_case(fire, failed_run, suite):
    case_run = CaseRun.objects.get(run=failed_run, case_key="case-0")
    answers = fire("POST", f"{API}/runs/{failed_run.pk}/cases/{case_run.pk}/promote", {"suite_id": suite.pk})
    counts = statuses(answers)
    assert counts[201] == 1 and counts[200] == THREADS - 1, [(r.status_code, r.text[:200]) for r in answers]
    assert len({response.json()["id"] for response in answers}) == 1
    assert RegressionCase.objects.filter(suite=suite, source_case_run=case_run).count() == 1


def test_concurrent_gate_evaluations_make_one_verdict(fire, workspace, admin, failed_run, pack_version, deployment, tasks):
    good = finished_run(workspace, admin, pack_version, make_deployment(workspace, name="good"), tasks)
    comparison = comparison_create(workspace=workspace, user=admin, baseline_run=good, candidate_run=failed_run)
    answers = fire("POST", f"{API}/comparisons/{comparison.pk}/gate", {})
    counts = statuses(answers)
    assert counts[201] == 1 and counts[200] == THREADS - 1, [(r.status_code, r.text[:200]) for r in answers]
    assert len({response.json()["id"] for response in answers}) == 1
    assert GateResult.objects.filter(comparison=comparison).count() == 1


def test_concurrent_run_starts_with_one_idempotency_key_start_one_run(fire, workspace, pack_version, deployment):
    body = {"pack_version_id": pack_version.pk, "deployment_ids": [deployment.pk]}
    answers = fire("POST", f"{API}/runs", body, headers={"Idempotency-Key": "ci-job-7"})
    assert statuses(answers) == Counter({201: THREADS}), [(r.status_code, r.text[:200]) for r in answers]
    assert len({response.json()["id"] for response in answers}) == 1
    assert sum(response.headers.get("Idempotent-Replayed") == "true" for response in answers) == THREADS - 1
    assert Run.objects.filter(workspace=workspace).count() == 1

"""The regression suites API: list, create, promote, review, runs with suites, gates with regression rules."""

from __future__ import annotations

import pytest

from regression.models import RegressionCase
from regression.tests.factories import finished_run, promoted
from runs.models import CaseRun
from runs.tests.factories import make_deployment, native_pack_yaml, publish

API = "/api/v1/workspaces/acme"


@pytest.mark.django_db
@pytest.mark.parametrize("persona, expected", [("viewer", 200), ("stranger", 404)])
def test_listing_suites_needs_membership(request, api_client_for, suite, persona, expected):
    response = api_client_for(request.getfixturevalue(persona)).get(f"{API}/regression-suites")
    assert response.status_code == expected
    if expected == 200:
        body = response.json()
        assert body["count"] == 1 and body["results"][0]["id"] == suite.pk and body["results"][0]["name"] == "smoke"
        assert api_client_for(request.getfixturevalue(persona)).get(f"{API}/regression-suites/{suite.pk}").status_code == 200


@pytest.mark.django_db
def test_creating_a_suite_needs_a_member_and_a_pack_of_the_workspace(
    api_client_for, member, viewer, stranger, pack_version, other_workspace
):
    body = {"pack_id": pack_version.pack_id, "name": "nightly"}
    assert api_client_for(viewer).post(f"{API}/regression-suites", body, format="json").status_code == 403
    created = api_client_for(member).post(f"{API}/regression-suites", body, format="json")
    assert created.status_code == 201 and created.json()["pack_slug"] == pack_version.pack.slug
    duplicate = api_client_for(member).post(f"{API}/regression-suites", body, format="json")
    assert duplicate.status_code == 400 and "name" in duplicate.json()["error"]["fields"]
    missing = api_client_for(member).post(f"{API}/regression-suites", {"name": "x"}, format="json")
    assert missing.status_code == 400 and "pack_id" in missing.json()["error"]["fields"]
    foreign_pack = publish(other_workspace, stranger, native_pack_yaml(cases=1)).pack_id
    assert api_client_for(member).post(f"{API}/regression-suites", {"pack_id": foreign_pack, "name": "y"}, format="json").status_code == 404


@pytest.mark.django_db
def test_promote_activate_archive_through_the_api(api_client_for, member, viewer, failed_run, suite):
    case_run = CaseRun.objects.get(run=failed_run, case_key="case-0")
    url = f"{API}/runs/{failed_run.pk}/cases/{case_run.pk}/promote"
    assert api_client_for(viewer).post(url, {"suite_id": suite.pk, "status": "proposed"}, format="json").status_code == 403
    response = api_client_for(member).post(url, {"suite_id": suite.pk, "status": "proposed", "severity": "warning"}, format="json")
    assert response.status_code == 201, response.content
    body = response.json()
    assert (body["status"], body["severity"], body["source_case_run_id"], body["case_key"]) == (
        "proposed",
        "warning",
        case_run.pk,
        "case-0",
    )
    assert api_client_for(member).post(url, {"suite_id": suite.pk, "status": "proposed"}, format="json").status_code == 200  # idempotent
    case_id = body["id"]
    assert api_client_for(viewer).post(f"{API}/regression-cases/{case_id}/activate").status_code == 403
    activated = api_client_for(member).post(f"{API}/regression-cases/{case_id}/activate")
    assert activated.status_code == 200 and activated.json()["status"] == "active"
    assert RegressionCase.objects.get(pk=case_id).status == "active"
    listed = api_client_for(viewer).get(f"{API}/regression-suites/{suite.pk}/cases?status=active").json()
    assert [c["id"] for c in listed["results"]] == [case_id]
    assert (
        api_client_for(member).patch(f"{API}/regression-cases/{case_id}", {"severity": "blocking"}, format="json").json()["severity"]
        == "blocking"
    )
    assert api_client_for(member).post(f"{API}/regression-cases/{case_id}/archive").json()["status"] == "archived"
    bad = api_client_for(viewer).get(f"{API}/regression-suites/{suite.pk}/cases?status=nope")
    assert bad.status_code == 400 and "status" in bad.json()["error"]["fields"]


@pytest.mark.django_db
def test_promote_refusals_are_400s_naming_the_field(
    api_client_for, workspace, admin, member, failed_run, suite, deployment, pack_version, tasks
):
    url = f"{API}/runs/{failed_run.pk}/cases/{failed_run.case_runs.first().pk}/promote"
    bad_status = api_client_for(member).post(url, {"suite_id": suite.pk, "status": "archived"}, format="json")
    assert bad_status.status_code == 400 and "status" in bad_status.json()["error"]["fields"]
    no_suite = api_client_for(member).post(url, {"status": "proposed"}, format="json")
    assert no_suite.status_code == 400 and "suite_id" in no_suite.json()["error"]["fields"]
    good = finished_run(workspace, admin, pack_version, deployment, tasks)
    passed = api_client_for(member).post(
        f"{API}/runs/{good.pk}/cases/{good.case_runs.first().pk}/promote", {"suite_id": suite.pk}, format="json"
    )
    assert passed.status_code == 400 and "case_run_id" in passed.json()["error"]["fields"]


@pytest.mark.django_db
def test_another_workspaces_suite_case_or_run_is_404(api_client_for, stranger, member, failed_run, suite, workspace, admin):
    case = promoted(workspace, admin, failed_run, suite)
    client = api_client_for(stranger)
    for path in (f"/regression-suites/{suite.pk}", f"/regression-suites/{suite.pk}/cases", f"/regression-cases/{case.pk}"):
        assert client.get(API.replace("acme", "globex") + path).status_code == 404, path
    assert client.post(API.replace("acme", "globex") + f"/regression-cases/{case.pk}/activate").status_code == 404
    url = f"{API.replace('acme', 'globex')}/runs/{failed_run.pk}/cases/{failed_run.case_runs.first().pk}/promote"
    assert client.post(url, {"suite_id": suite.pk}, format="json").status_code == 404


@pytest.mark.django_db
def test_run_create_api_takes_suites_and_scope(
    api_client_for, member, workspace, admin, failed_run, suite, pack_version, deployment, tasks
):
    case = promoted(workspace, admin, failed_run, suite)
    body = {
        "pack_version_id": pack_version.pk,
        "deployment_ids": [deployment.pk],
        "regression_suite_ids": [suite.pk],
        "regression_scope": "suite_only",
    }
    response = api_client_for(member).post(f"{API}/runs", body, format="json")
    assert response.status_code == 201, response.content
    run_id = response.json()["id"]
    assert response.json()["case_counts"]["total"] == 1
    tasks.drain()
    cases = api_client_for(member).get(f"{API}/runs/{run_id}/cases").json()["results"]
    assert [(c["case_key"], c["regression_case_id"], c["passed"]) for c in cases] == [(f"regression/{case.pk}/case-1", case.pk, True)]
    coverage = api_client_for(member).get(f"{API}/runs/{run_id}/regression").json()
    assert coverage == [{"suite_id": suite.pk, "suite_name": "smoke", "cases": 1, "passed": 1, "failed": 0, "pending": 0}]
    bad_scope = api_client_for(member).post(f"{API}/runs", {**body, "regression_scope": "most"}, format="json")
    assert bad_scope.status_code == 400 and "regression_scope" in bad_scope.json()["error"]["fields"]
    RegressionCase.objects.filter(pk=case.pk).update(challenge_key="gone")
    no_challenge = api_client_for(member).post(f"{API}/runs", body, format="json")
    assert no_challenge.status_code == 400 and "gone" in no_challenge.json()["error"]["message"]
    assert "regression_suite_ids" in no_challenge.json()["error"]["fields"]
    assert api_client_for(member).post(f"{API}/runs", {**body, "regression_suite_ids": [99999]}, format="json").status_code == 404


POLICY = {
    "policy_key": "regressions", "required_dimensions": [], "dimensions": {}, "max_case_regressions": None,
    "regression_gate_rules": {"no_blocking_regression_failure": True, "no_new_blocking_failure_vs_baseline": True},
}  # fmt: skip


@pytest.mark.django_db
def test_a_gate_reports_the_regression_rule_of_a_suite_run(
    api_client_for, member, workspace, admin, failed_run, suite, pack_version, deployment, tasks
):
    case = promoted(workspace, admin, failed_run, suite)
    extra = {"regression_suite_ids": [suite.pk], "regression_scope": "suite_only"}
    baseline = finished_run(workspace, admin, pack_version, deployment, tasks, **extra)
    candidate = finished_run(
        workspace, admin, pack_version, make_deployment(workspace, name="regressed", script=[{"submit": "?"}]), tasks, **extra
    )
    client = api_client_for(member)
    comparison = client.post(f"{API}/comparisons", {"baseline_run_id": baseline.pk, "candidate_run_id": candidate.pk}, format="json")
    assert comparison.status_code in (200, 201), comparison.content
    gate = client.post(f"{API}/comparisons/{comparison.json()['id']}/gate", {"policy": POLICY}, format="json")
    assert gate.status_code in (200, 201), gate.content
    body = gate.json()
    assert (body["verdict"], body["reason_code"]) == ("fail", "regression_blocking_failure")
    conditions = {c["condition"]: c for c in body["triggered_conditions"]}
    assert "regression_blocking_failure" in body["summary"]
    assert conditions["no_blocking_regression_failure"]["cases"] == [str(case.pk)]
    assert conditions["no_new_blocking_failure_vs_baseline"]["cases"] == [str(case.pk)]
    good = client.post(f"{API}/comparisons", {"baseline_run_id": candidate.pk, "candidate_run_id": baseline.pk}, format="json").json()
    assert client.post(f"{API}/comparisons/{good['id']}/gate", {"policy": POLICY}, format="json").json()["verdict"] == "pass"

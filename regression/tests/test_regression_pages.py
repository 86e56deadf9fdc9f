"""Regression pages: suites list, a suite's Activate/Archive, Promote on the replay, suites in the New-run form."""

from __future__ import annotations

import pytest

from regression.models import RegressionCase, RegressionSuite
from regression.tests.factories import failing_deployment, finished_run, promoted, suite_for
from runs.models import CaseRun, Run


@pytest.mark.django_db
@pytest.mark.parametrize("persona, expected", [("viewer", 200), ("stranger", 404)])
def test_the_suites_pages_need_membership(request, client_for, suite, persona, expected):
    client = client_for(request.getfixturevalue(persona))
    assert client.get("/w/acme/regression-suites/").status_code == expected
    assert client.get(f"/w/acme/regression-suites/{suite.pk}/").status_code == expected


@pytest.mark.django_db
def test_a_member_creates_a_suite_and_a_viewer_cannot(client_for, member, viewer, pack_version):
    page = client_for(viewer).get("/w/acme/regression-suites/")
    assert b"No regression suites yet" in page.content and b"New suite" not in page.content
    assert client_for(viewer).post("/w/acme/regression-suites/", {"name": "x", "pack": pack_version.pack_id}).status_code == 403
    response = client_for(member).post("/w/acme/regression-suites/", {"name": "nightly", "pack": pack_version.pack_id})
    suite = RegressionSuite.objects.get(name="nightly")
    assert response.status_code == 302 and response["Location"] == f"/w/acme/regression-suites/{suite.pk}/"


@pytest.mark.django_db
def test_the_suites_list_does_not_grow_queries_with_suites(
    client_for, viewer, workspace, admin, pack_version, django_assert_max_num_queries
):
    for n in range(5):
        suite_for(workspace, admin, pack_version, name=f"s{n}")
    client = client_for(viewer)
    with django_assert_max_num_queries(12):
        page = client.get("/w/acme/regression-suites/")
    assert page.content.count(b'id="suite-') == 5


@pytest.mark.django_db
def test_promote_on_the_replay_page_makes_a_proposed_case(client_for, member, viewer, failed_run, suite):
    case_run = CaseRun.objects.get(run=failed_run, case_key="case-0")
    replay = f"/w/acme/runs/{failed_run.pk}/cases/{case_run.pk}/"
    assert b"data-promote" in client_for(member).get(replay).content
    assert b"data-promote" not in client_for(viewer).get(replay).content
    url = f"/w/acme/runs/{failed_run.pk}/cases/{case_run.pk}/promote/"
    assert client_for(viewer).post(url, {"suite": suite.pk, "severity": "blocking"}).status_code == 403
    response = client_for(member).post(url, {"suite": suite.pk, "severity": "warning"})
    case = RegressionCase.objects.get()
    assert response.status_code == 302 and response["Location"] == f"/w/acme/regression-suites/{suite.pk}/"
    assert (case.status, case.severity, case.source_case_run_id) == ("proposed", "warning", case_run.pk)


@pytest.mark.django_db
def test_activate_and_archive_buttons_swap_the_row(client_for, member, viewer, workspace, admin, failed_run, suite):
    case = promoted(workspace, admin, failed_run, suite, active=False)
    page = client_for(member).get(f"/w/acme/regression-suites/{suite.pk}/")
    assert b">Activate</button>" in page.content and b">Archive</button>" in page.content
    url = f"/w/acme/regression-cases/{case.pk}/status/"
    assert client_for(viewer).post(url, {"status": "active"}).status_code == 403
    row = client_for(member).post(url, {"status": "active"}, headers={"HX-Request": "true"})
    assert row.status_code == 200 and f'id="regression-case-{case.pk}"'.encode() in row.content
    assert b'data-case-status="active"' in row.content and b"<html" not in row.content
    assert RegressionCase.objects.get(pk=case.pk).status == "active"
    plain = client_for(member).post(url, {"status": "archived"})
    assert plain.status_code == 302 and RegressionCase.objects.get(pk=case.pk).status == "archived"


@pytest.mark.django_db
def test_the_new_run_form_starts_a_suite_only_run(client_for, member, workspace, admin, failed_run, suite, pack_version, deployment):
    case = promoted(workspace, admin, failed_run, suite)
    form = client_for(member).get(f"/w/acme/runs/new/?pack_version={pack_version.pk}")
    assert b'id="run-regression"' in form.content and b"smoke" in form.content
    data = {"pack_version_id": pack_version.pk, "deployment_ids": [deployment.pk], "regression_suite_ids": [suite.pk], "regression_scope": "suite_only",
            "judges_for": pack_version.pk}  # fmt: skip
    refused = client_for(member).post("/w/acme/runs/new/", {**data, "regression_suite_ids": []})  # suite_only without a suite
    assert "needs at least one active regression case" in refused.context["form"].errors["regression_suite_ids"][0]
    response = client_for(member).post("/w/acme/runs/new/", data)
    assert response.status_code == 302, response.content.decode()[:2000]
    run = Run.objects.latest("pk")
    assert list(run.case_runs.values_list("regression_case_id", flat=True)) == [case.pk]


@pytest.mark.django_db
def test_the_run_page_shows_regression_coverage(client_for, viewer, workspace, admin, failed_run, suite, pack_version, tasks):
    promoted(workspace, admin, failed_run, suite)
    run = finished_run(workspace, admin, pack_version, failing_deployment(workspace, "again"), tasks, regression_suite_ids=[suite.pk])
    page = client_for(viewer).get(f"/w/acme/runs/{run.pk}/").content.decode()
    assert 'id="regression-coverage"' in page and "1 fail" in page
    assert 'id="regression-coverage"' not in client_for(viewer).get(f"/w/acme/runs/{failed_run.pk}/").content.decode()


@pytest.mark.django_db
def test_the_failures_review_offers_promote_per_case(client_for, member, viewer, failed_run, suite):
    page = client_for(member).get(f"/w/acme/runs/{failed_run.pk}/failures/")
    assert page.status_code == 200
    case_run = CaseRun.objects.get(run=failed_run, case_key="case-2")
    assert f'data-promote-form="{case_run.pk}"'.encode() in page.content
    assert b"data-promote-form" not in client_for(viewer).get(f"/w/acme/runs/{failed_run.pk}/failures/").content
    response = client_for(member).post(
        f"/w/acme/runs/{failed_run.pk}/cases/{case_run.pk}/promote/", {"suite": suite.pk, "severity": "blocking"}
    )
    assert response.status_code == 302 and RegressionCase.objects.get().source_case_run_id == case_run.pk

"""Renaming, archiving/restoring and deleting regression suites: pages, API, roles, isolation, history."""

from __future__ import annotations

import pytest
from django.db.models import RestrictedError

from regression.models import RegressionCase, RegressionSuite
from regression.services import regression_suite_create
from regression.tests.factories import failing_deployment, finished_run, promoted
from runs import services as run_services
from runs.models import CaseRun

pytestmark = pytest.mark.django_db

API = "/api/v1/workspaces/acme"


@pytest.fixture
def used_suite(workspace, admin, pack_version, failed_run, suite, tasks):
    """A suite whose active case a run has run."""
    promoted(workspace, admin, failed_run, suite)
    finished_run(workspace, admin, pack_version, failing_deployment(workspace, "again"), tasks, regression_suite_ids=[suite.pk])
    return suite


# -- pages ------------------------------------------------------------------------------------


def test_a_member_renames_a_suite_on_its_page_and_a_viewer_cannot(client_for, member, viewer, workspace, admin, pack_version, suite):
    page = client_for(viewer).get(f"/w/acme/regression-suites/{suite.pk}/").content.decode()
    assert "Suite settings" not in page
    assert client_for(viewer).post(f"/w/acme/regression-suites/{suite.pk}/edit/", {"name": "x"}).status_code == 403

    response = client_for(member).post(f"/w/acme/regression-suites/{suite.pk}/edit/", {"name": " nightly ", "description": "kept"})
    assert response.status_code == 302
    suite.refresh_from_db()
    assert (suite.name, suite.description) == ("nightly", "kept")
    assert "Suite settings" in client_for(member).get(f"/w/acme/regression-suites/{suite.pk}/").content.decode()

    regression_suite_create(workspace=workspace, user=admin, pack=pack_version.pack, name="taken")
    clash = client_for(member).post(f"/w/acme/regression-suites/{suite.pk}/edit/", {"name": "taken"})
    assert clash.status_code == 400 and "already exists" in clash.content.decode()
    blank = client_for(member).post(f"/w/acme/regression-suites/{suite.pk}/edit/", {"name": ""})
    assert blank.status_code == 400
    suite.refresh_from_db()
    assert suite.name == "nightly"


def test_archiving_hides_a_suite_from_new_runs_and_promote_and_restoring_brings_it_back(
    client_for, member, admin, workspace, pack_version, failed_run, suite
):
    case_run = CaseRun.objects.get(run=failed_run, case_key="case-1")
    assert client_for(member).post(f"/w/acme/regression-suites/{suite.pk}/archive/", {"archived": "1"}).status_code == 302
    suite.refresh_from_db()
    assert suite.archived_at is not None
    assert "Archived" in client_for(member).get("/w/acme/regression-suites/").content.decode()
    # the replay's Promote form no longer offers it
    replay = client_for(member).get(f"/w/acme/runs/{failed_run.pk}/cases/{case_run.pk}/").content.decode()
    assert f'value="{suite.pk}"' not in replay
    # nor the New-run form, and a run naming it is refused with the field
    form = client_for(member).get(f"/w/acme/runs/new/?pack_version={pack_version.pk}").content.decode()
    assert 'name="regression_suite_ids"' not in form
    with pytest.raises(Exception) as refused:
        run_services.run_create(
            workspace=workspace, user=admin, pack_version=pack_version, deployment_ids=[failing_deployment(workspace, "x").pk],
            regression_suite_ids=[suite.pk],
        )  # fmt: skip
    assert "archived" in str(refused.value)

    assert client_for(member).post(f"/w/acme/regression-suites/{suite.pk}/archive/", {"archived": "0"}).status_code == 302
    suite.refresh_from_db()
    assert suite.archived_at is None
    replay = client_for(member).get(f"/w/acme/runs/{failed_run.pk}/cases/{case_run.pk}/").content.decode()
    assert f'value="{suite.pk}"' in replay


def test_an_admin_deletes_an_unused_suite_but_a_member_cannot(client_for, member, admin, workspace, failed_run, suite):
    promoted(workspace, admin, failed_run, suite, active=False)
    assert client_for(member).post(f"/w/acme/regression-suites/{suite.pk}/delete/").status_code == 403
    assert "Delete suite" in client_for(admin).get(f"/w/acme/regression-suites/{suite.pk}/").content.decode()
    response = client_for(admin).post(f"/w/acme/regression-suites/{suite.pk}/delete/")
    assert response.status_code == 302 and response["Location"] == "/w/acme/regression-suites/"
    assert not RegressionSuite.objects.filter(pk=suite.pk).exists() and not RegressionCase.objects.exists()


def test_a_suite_that_runs_used_is_archived_not_deleted(client_for, admin, used_suite):
    page = client_for(admin).get(f"/w/acme/regression-suites/{used_suite.pk}/").content.decode()
    assert "Delete suite" not in page and "data-delete-refused" in page
    response = client_for(admin).post(f"/w/acme/regression-suites/{used_suite.pk}/delete/", follow=True)
    assert "archive the suite instead" in response.content.decode()
    assert RegressionSuite.objects.filter(pk=used_suite.pk).exists()
    history = CaseRun.objects.filter(regression_case__suite=used_suite)
    assert history.count() == 1
    # the database keeps the history too: a regression case that runs used cannot be deleted under them
    with pytest.raises(RestrictedError):
        used_suite.delete()


def test_another_workspaces_suite_is_a_404_on_every_action(client_for, stranger, suite):
    for action, data in (("edit/", {"name": "x"}), ("archive/", {"archived": "1"}), ("delete/", {})):
        assert client_for(stranger).post(f"/w/acme/regression-suites/{suite.pk}/{action}", data).status_code == 404
        assert client_for(stranger).post(f"/w/globex/regression-suites/{suite.pk}/{action}", data).status_code == 404
    suite.refresh_from_db()
    assert suite.name == "smoke" and suite.archived_at is None


# -- API --------------------------------------------------------------------------------------


def test_the_api_renames_and_archives_with_member_rights(api_client_for, member, viewer, suite):
    url = f"{API}/regression-suites/{suite.pk}"
    assert api_client_for(viewer).patch(url, {"name": "x"}, format="json").status_code == 403
    renamed = api_client_for(member).patch(url, {"name": "nightly", "description": "d"}, format="json")
    assert renamed.status_code == 200 and renamed.json()["name"] == "nightly" and renamed.json()["archived_at"] is None
    archived = api_client_for(member).patch(url, {"archived": True}, format="json")
    assert archived.status_code == 200 and archived.json()["archived_at"] is not None
    listed = api_client_for(viewer).get(f"{API}/regression-suites").json()["results"]
    assert listed[0]["archived_at"] is not None
    restored = api_client_for(member).patch(url, {"archived": False}, format="json")
    assert restored.json()["archived_at"] is None


@pytest.mark.parametrize(
    "body, field",
    [({"name": ""}, "name"), ({"name": "x" * 201}, "name"), ({"archived": "maybe"}, "archived"), ({"name": "taken"}, "name")],
)
def test_bad_api_input_is_a_400_naming_the_field(api_client_for, member, workspace, admin, pack_version, suite, body, field):
    regression_suite_create(workspace=workspace, user=admin, pack=pack_version.pack, name="taken")
    response = api_client_for(member).patch(f"{API}/regression-suites/{suite.pk}", body, format="json")
    assert response.status_code == 400 and field in response.json()["error"]["fields"]


def test_the_api_deletes_an_unused_suite_for_admins_only(api_client_for, member, admin, suite):
    url = f"{API}/regression-suites/{suite.pk}"
    assert api_client_for(member).delete(url).status_code == 403
    assert api_client_for(admin).delete(url).status_code == 204
    assert api_client_for(admin).get(url).status_code == 404


def test_the_api_refuses_to_delete_a_suite_runs_used(api_client_for, admin, used_suite):
    response = api_client_for(admin).delete(f"{API}/regression-suites/{used_suite.pk}")
    assert response.status_code == 409 and response.json()["error"]["code"] == "suite_in_use"
    assert RegressionSuite.objects.filter(pk=used_suite.pk).exists()


def test_the_api_refuses_runs_and_promotes_into_an_archived_suite(api_client_for, member, admin, pack_version, failed_run, suite):
    api_client_for(member).patch(f"{API}/regression-suites/{suite.pk}", {"archived": True}, format="json")
    case_run = CaseRun.objects.get(run=failed_run, case_key="case-1")
    promote = api_client_for(member).post(f"{API}/runs/{failed_run.pk}/cases/{case_run.pk}/promote", {"suite_id": suite.pk}, format="json")
    assert promote.status_code == 400 and "suite_id" in promote.json()["error"]["fields"]


def test_the_api_isolates_workspaces(api_client_for, stranger, suite):
    url = f"{API}/regression-suites/{suite.pk}"
    assert api_client_for(stranger).patch(url, {"name": "x"}, format="json").status_code == 404
    assert api_client_for(stranger).delete(url).status_code == 404
    assert (
        api_client_for(stranger).patch(f"/api/v1/workspaces/globex/regression-suites/{suite.pk}", {"name": "x"}, format="json").status_code
        == 404
    )


def test_a_run_that_slipped_in_after_the_check_still_keeps_the_suite(api_client_for, admin, used_suite, monkeypatch):
    from regression import services as regression_services

    monkeypatch.setattr(regression_services, "suite_in_use", lambda suite: False)  # the check raced a new run
    response = api_client_for(admin).delete(f"{API}/regression-suites/{used_suite.pk}")
    assert response.status_code == 409 and response.json()["error"]["code"] == "suite_in_use"
    assert RegressionCase.objects.filter(suite=used_suite).count() == 1

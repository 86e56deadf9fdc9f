"""Regression suites: promote, review, and runs that include suites (services and run_create)."""

from __future__ import annotations

import pytest
from django.http import Http404

from core.errors import Conflict, DomainError, NotFound
from regression import selectors
from regression.models import RegressionCase
from regression.services import regression_case_promote, regression_case_set_status, regression_suite_create
from regression.tests.factories import failing_deployment, finished_run, promoted, suite_for
from runs import services
from runs.models import CaseRun, RunEvent
from runs.tests.factories import native_pack_yaml, publish


@pytest.mark.django_db
def test_promote_snapshots_the_case_and_links_the_failure(workspace, admin, pack_version, failed_run):
    suite = suite_for(workspace, admin, pack_version)
    case_run = CaseRun.objects.get(run=failed_run, case_key="case-1")
    assert case_run.passed is False
    case, created = regression_case_promote(workspace=workspace, user=admin, case_run=case_run, suite=suite, severity="warning")
    assert created and case.status == "proposed" and case.severity == "warning"
    assert case.payload == case_run.case.payload and case.payload["expectations"][0]["value"] == "note number 1"
    assert (case.challenge_key, case.case_key) == ("notes", "case-1")
    assert case.failure_summary.startswith(("Did not pass; score ", "Failed")) and "_" not in case.failure_summary
    assert (case.source_run_id, case.source_lane_id, case.source_case_run_id) == (failed_run.pk, case_run.lane_id, case_run.pk)
    sequences = sorted(RunEvent.objects.filter(case_run=case_run).values_list("sequence_number", flat=True))
    assert (case.source_first_sequence, case.source_last_sequence) == (sequences[0], sequences[-1])
    again, created_again = regression_case_promote(workspace=workspace, user=admin, case_run=case_run, suite=suite)
    assert again.pk == case.pk and not created_again and RegressionCase.objects.count() == 1


@pytest.mark.django_db
def test_it_refuses_to_promote_a_passed_case_or_into_another_packs_suite(workspace, admin, pack_version, deployment, failed_run, tasks):
    good = finished_run(workspace, admin, pack_version, deployment, tasks)
    suite = suite_for(workspace, admin, pack_version)
    with pytest.raises(DomainError, match="Only a failed case"):
        regression_case_promote(workspace=workspace, user=admin, case_run=good.case_runs.first(), suite=suite)
    other_pack = publish(workspace, admin, native_pack_yaml(cases=1))
    other_suite = suite_for(workspace, admin, other_pack, name="other")
    with pytest.raises(DomainError, match="another pack"):
        regression_case_promote(workspace=workspace, user=admin, case_run=failed_run.case_runs.first(), suite=other_suite)
    with pytest.raises(DomainError, match="status must be"):
        regression_case_promote(workspace=workspace, user=admin, case_run=failed_run.case_runs.first(), suite=suite, status="archived")
    with pytest.raises(DomainError, match="already exists"):
        regression_suite_create(workspace=workspace, user=admin, pack=pack_version.pack, name="smoke")


@pytest.mark.django_db
def test_activate_and_archive_follow_the_review_transitions(workspace, admin, pack_version, failed_run):
    suite = suite_for(workspace, admin, pack_version)
    case = promoted(workspace, admin, failed_run, suite, active=False)
    case = regression_case_set_status(case=case, user=admin, status="active")
    assert case.status == "active" and case.status_changed_by == admin
    case = regression_case_set_status(case=case, user=admin, status="archived")
    with pytest.raises(DomainError, match="cannot become proposed"):
        regression_case_set_status(case=case, user=admin, status="proposed")
    stale = RegressionCase.objects.get(pk=case.pk)
    regression_case_set_status(case=case, user=admin, status="active")
    with pytest.raises(Conflict, match="changed this case meanwhile"):
        regression_case_set_status(case=stale, user=admin, status="active")  # stale still thinks it is archived


@pytest.mark.django_db
def test_another_workspaces_suite_or_case_is_not_found(workspace, other_workspace, admin, pack_version, failed_run):
    suite = suite_for(workspace, admin, pack_version)
    case = promoted(workspace, admin, failed_run, suite)
    with pytest.raises(Http404):
        selectors.suite_get(workspace=other_workspace, pk=suite.pk)
    with pytest.raises(Http404):
        selectors.case_get(workspace=other_workspace, pk=case.pk)
    with pytest.raises(NotFound):
        regression_case_promote(workspace=other_workspace, user=admin, case_run=failed_run.case_runs.first(), suite=suite)


@pytest.mark.django_db
def test_a_suite_only_run_runs_just_the_active_regression_cases(workspace, admin, pack_version, deployment, failed_run, tasks):
    suite = suite_for(workspace, admin, pack_version)
    active = promoted(workspace, admin, failed_run, suite, case_key="case-1")
    proposed = promoted(workspace, admin, failed_run, suite, case_key="case-2", active=False)
    run = finished_run(workspace, admin, pack_version, deployment, tasks, regression_suite_ids=[suite.pk], regression_scope="suite_only")
    rows = list(CaseRun.objects.filter(run=run))
    assert [(r.case_key, r.regression_case_id) for r in rows] == [(f"regression/{active.pk}/case-1", active.pk)]
    assert rows[0].status == "completed" and rows[0].passed is True  # the snapshot's note was staged and scored
    coverage = selectors.run_regression_coverage(run=run)
    assert [(c.suite_name, c.cases, c.passed, c.failed, c.pending) for c in coverage] == [("smoke", 1, 1, 0, 0)]
    with_proposed = services.run_create(
        workspace=workspace, user=admin, pack_version=pack_version, deployment_ids=[deployment.pk],
        regression_suite_ids=[suite.pk], regression_scope="suite_only", include_proposed=True,
    )  # fmt: skip
    assert sorted(with_proposed.case_runs.values_list("regression_case_id", flat=True)) == sorted([active.pk, proposed.pk])


@pytest.mark.django_db
def test_a_full_run_adds_regression_cases_to_the_packs_own(workspace, admin, pack_version, deployment, failed_run, tasks):
    suite = suite_for(workspace, admin, pack_version)
    case = promoted(workspace, admin, failed_run, suite)
    run = finished_run(workspace, admin, failed_run.pack_version, failing_deployment(workspace, "again"), tasks,
                       regression_suite_ids=[suite.pk])  # fmt: skip
    keys = list(CaseRun.objects.filter(run=run).values_list("case_key", "passed"))
    assert keys == [("case-0", False), ("case-1", False), ("case-2", False), (f"regression/{case.pk}/case-1", False)]
    assert [(c.cases, c.failed) for c in selectors.run_regression_coverage(run=run)] == [(1, 1)]
    single = services.run_create(workspace=workspace, user=admin, pack_version=pack_version, deployment_ids=[deployment.pk],
                                 regression_case_ids=[case.pk], regression_scope="suite_only")  # fmt: skip
    assert single.case_runs.get().regression_case_id == case.pk


@pytest.mark.django_db
def test_run_create_refuses_bad_regression_requests(workspace, other_workspace, admin, stranger, pack_version, deployment, failed_run):
    suite = suite_for(workspace, admin, pack_version)
    proposed = promoted(workspace, admin, failed_run, suite, active=False)

    def create(**extra):
        return services.run_create(workspace=workspace, user=admin, pack_version=pack_version, deployment_ids=[deployment.pk], **extra)

    with pytest.raises(DomainError, match="regression_scope must be") as exc:
        create(regression_suite_ids=[suite.pk], regression_scope="everything")
    assert exc.value.field == "regression_scope"
    with pytest.raises(DomainError, match="needs at least one active regression case"):
        create(regression_suite_ids=[suite.pk], regression_scope="suite_only")  # only a proposed case
    with pytest.raises(DomainError, match="only proposed"):
        create(regression_case_ids=[proposed.pk])
    foreign = suite_for(other_workspace, stranger, publish(other_workspace, stranger, native_pack_yaml(cases=1)))
    with pytest.raises(NotFound):  # another workspace's suite: a domain 404, never a 400
        create(regression_suite_ids=[foreign.pk])
    other_version = publish(workspace, admin, native_pack_yaml(cases=1))
    with pytest.raises(DomainError, match="another pack") as exc:
        services.run_create(workspace=workspace, user=admin, pack_version=other_version, deployment_ids=[deployment.pk],
                            regression_suite_ids=[suite.pk])  # fmt: skip
    assert exc.value.field == "regression_suite_ids"


@pytest.mark.django_db
def test_run_create_refuses_a_case_whose_challenge_the_version_lacks(workspace, admin, pack_version, deployment, failed_run):
    suite = suite_for(workspace, admin, pack_version)
    case = promoted(workspace, admin, failed_run, suite)
    RegressionCase.objects.filter(pk=case.pk).update(challenge_key="gone")
    with pytest.raises(DomainError, match="needs challenge 'gone'") as exc:
        services.run_create(workspace=workspace, user=admin, pack_version=pack_version, deployment_ids=[deployment.pk],
                            regression_suite_ids=[suite.pk], regression_scope="suite_only")  # fmt: skip
    assert exc.value.field == "regression_suite_ids" and case.title in exc.value.message

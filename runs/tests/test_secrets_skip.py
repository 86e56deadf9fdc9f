"""A case reads the workspace's secrets only when its run can involve one (docs/secrets.md)."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from runs import services
from runs.models import CaseRun, CaseStatus, RunEvent
from runs.tests.factories import make_deployment
from secrets_app.models import WorkspaceSecret

SECRETS_TABLE = WorkspaceSecret._meta.db_table


def _run(workspace, admin, pack_version, deployment):
    return services.run_create(workspace=workspace, user=admin, pack_version=pack_version, deployment_ids=[deployment.pk])


def _secret_reads(queries) -> list[str]:
    return [q["sql"] for q in queries if SECRETS_TABLE in q["sql"]]


@pytest.mark.django_db
def test_a_run_records_whether_its_workspace_had_secrets(workspace, admin, pack_version):
    from secrets_app.services import secret_set

    deployment = make_deployment(workspace)
    assert _run(workspace, admin, pack_version, deployment).workspace_had_secrets is False
    secret_set(workspace=workspace, key="API_TOKEN", value="s3cr3t-value-123")
    assert _run(workspace, admin, pack_version, deployment).workspace_had_secrets is True


@pytest.mark.django_db
def test_a_secret_created_after_the_run_that_it_cannot_reference_is_not_read(workspace, admin, pack_version, tasks):
    from secrets_app.services import secret_set

    deployment = make_deployment(workspace, script=[{"submit": "the token is s3cr3t-value-123"}])
    run = _run(workspace, admin, pack_version, deployment)
    # Created after the run: nothing the run was given (pack, deployment, inputs) can hold it.
    secret_set(workspace=workspace, key="API_TOKEN", value="s3cr3t-value-123")
    with CaptureQueriesContext(connection) as queries:
        tasks.drain()
    cases = list(CaseRun.objects.filter(run=run))
    assert cases and all(case.status == CaseStatus.COMPLETED for case in cases), [case.error for case in cases]
    assert _secret_reads(queries.captured_queries) == []
    assert RunEvent.objects.filter(run=run).exists()


@pytest.mark.django_db
def test_a_run_that_had_secrets_reads_and_masks_them(workspace, admin, pack_version, tasks):
    from secrets_app.services import secret_set

    secret_set(workspace=workspace, key="API_TOKEN", value="s3cr3t-value-123")
    deployment = make_deployment(workspace, script=[{"submit": "the token is s3cr3t-value-123"}])
    run = _run(workspace, admin, pack_version, deployment)
    with CaptureQueriesContext(connection) as queries:
        tasks.drain()
    assert _secret_reads(queries.captured_queries)
    for case in CaseRun.objects.filter(run=run):
        assert "s3cr3t-value-123" not in (case.final_output or "") and "[redacted]" in case.final_output
    for payload in RunEvent.objects.filter(run=run).values_list("payload", flat=True):
        assert "s3cr3t-value-123" not in str(payload)


@pytest.mark.django_db
def test_a_credential_created_after_the_run_is_still_read_and_masked(workspace, admin, pack_version, tasks):
    from secrets_app.services import secret_set

    # The provider account names a secret that does not exist yet when the run is created.
    deployment = make_deployment(
        workspace, script=[{"submit": "the key is k3y-value-456"}], credential_reference="workspace-secret://PROVIDER_KEY"
    )
    run = _run(workspace, admin, pack_version, deployment)
    assert run.workspace_had_secrets is False
    secret_set(workspace=workspace, key="PROVIDER_KEY", value="k3y-value-456")
    with CaptureQueriesContext(connection) as queries:
        tasks.drain()
    assert _secret_reads(queries.captured_queries)
    for case in CaseRun.objects.filter(run=run):
        assert case.status == CaseStatus.COMPLETED, case.error
        assert "k3y-value-456" not in (case.final_output or "") and "[redacted]" in case.final_output

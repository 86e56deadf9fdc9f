"""Issue 21 item 2, done-when: a hosted case holds no worker while its agent works.

A worker with concurrency 1 (one pool process) takes a hosted case whose agent accepts it and
then stays silent, and finishes a native run of another workspace member meanwhile; the hosted
case is still running for its agent, and cancelling its run closes it at once.
"""

from __future__ import annotations

import pytest

from runs import services
from runs.models import CaseRun, CaseStatus, Run, RunStatus
from runs.tests.factories import make_deployment, native_pack_yaml, publish
from runs.tests.hosted_helpers import endpoint, hosted_deployment
from runs.tests.worker import Worker, wait_for

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def test_a_single_process_worker_finishes_a_native_run_while_a_hosted_case_waits_for_its_agent(workspace, admin, broker_queue):
    with endpoint(202) as (url, received):  # an agent that accepts every case and never reports back
        hosted = hosted_deployment(workspace, endpoint_url=url)  # a 30 s deadline
        hosted_run = services.run_create(
            workspace=workspace, user=admin, pack_version=publish(workspace, admin, native_pack_yaml(cases=1)), deployment_ids=[hosted.pk]
        )
        worker = Worker(queue=broker_queue, concurrency=1, extra_env={"ALLOW_PRIVATE_PROVIDER_URLS": "true"}).start()
        try:
            assert wait_for(lambda: len(received) == 1, timeout=60), "the hosted agent never got its case"
            native_version = publish(workspace, admin, native_pack_yaml(cases=3))
            native = make_deployment(workspace, name="native")
            native_run = services.run_create(workspace=workspace, user=admin, pack_version=native_version, deployment_ids=[native.pk])
            assert wait_for(lambda: Run.objects.get(pk=native_run.pk).is_terminal, timeout=60), "the native run waited for the hosted agent"
            assert Run.objects.get(pk=native_run.pk).status == RunStatus.COMPLETED
            hosted_case = CaseRun.objects.get(run=hosted_run)
            assert hosted_case.status == CaseStatus.RUNNING  # its agent still has it; nobody polls for it
            assert Run.objects.get(pk=hosted_run.pk).status == RunStatus.RUNNING
            services.run_cancel(run=Run.objects.get(pk=hosted_run.pk), user=admin)
            hosted_case.refresh_from_db()
            assert hosted_case.status == CaseStatus.CANCELLED and hosted_case.stop_reason == "cancelled"
        finally:
            worker.stop()

from __future__ import annotations

import pytest

from runs import services
from runs.models import CaseRun, CaseStatus, LaneStatus, RunEvent, RunStatus
from runs.tests.factories import make_deployment


@pytest.mark.django_db
def test_it_runs_a_pack_to_completion(workspace, admin, pack_version, deployment, tasks):
    run = services.run_create(workspace=workspace, user=admin, pack_version=pack_version, deployment_ids=[deployment.pk])
    assert tasks.names() == ["runs.run_start"]
    tasks.drain()
    run.refresh_from_db()
    assert run.status == RunStatus.COMPLETED, run.failure_reason
    cases = list(CaseRun.objects.filter(run=run).order_by("position"))
    assert [c.status for c in cases] == [CaseStatus.COMPLETED] * 3
    assert cases[0].final_output and "note number 0" in cases[0].final_output
    assert cases[0].tool_call_count == 1
    assert run.lanes.get().status == LaneStatus.COMPLETED
    seqs = list(RunEvent.objects.filter(lane__run=run).order_by("sequence_number").values_list("sequence_number", flat=True))
    assert seqs == list(range(1, len(seqs) + 1))

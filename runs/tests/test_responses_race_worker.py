"""A ``responses`` pack raced by two lanes with peer standings on, through a real Celery worker."""

from __future__ import annotations

import pytest

from runs import services
from runs.events import payload_hydrate
from runs.models import CaseRun, CaseStatus, Run, RunEvent, RunStatus
from runs.tests.factories import make_deployment, native_pack_yaml, publish
from runs.tests.worker import Worker, wait_for

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

READ = {"tool": "read_file", "args": {"path": "/workspace/notes.txt"}}


def test_a_real_worker_races_a_responses_pack_with_peer_standings(workspace, admin, broker_queue):
    version = publish(workspace, admin, native_pack_yaml(cases=2, mode="responses"))
    script = [{**READ, "reasoning": "Read the note first."}, READ, READ, {"submit": "{{last_result}}"}]
    lanes = [make_deployment(workspace, name=name, script=script, execution_target="responses").pk for name in ("left", "right")]
    worker = Worker(queue=broker_queue).start()
    try:
        run = services.run_create(workspace=workspace, user=admin, pack_version=version, deployment_ids=lanes, race_context=True)
        assert wait_for(lambda: Run.objects.get(pk=run.pk).is_terminal, timeout=120)
    finally:
        worker.stop()
    run.refresh_from_db()
    assert run.status == RunStatus.COMPLETED, run.failure_reason
    assert set(CaseRun.objects.filter(run=run).values_list("status", flat=True)) == {CaseStatus.COMPLETED}
    reasoning = RunEvent.objects.filter(run=run, event_type="model.reasoning")
    assert reasoning.count() == 4 and {e.source for e in reasoning} == {"responses_engine"}
    left, right = run.lanes.order_by("lane_index")
    for lane, peer in ((left, "lane B (right)"), (right, "lane A (left)")):
        notes = [
            message["content"]
            for event in RunEvent.objects.filter(lane=lane, event_type="model.call.started")
            for message in payload_hydrate(event.payload)["messages"]
            if message["content"].startswith("Race context")
        ]
        # At least one note per case (from step 3); another comes whenever the peer's standings
        # change mid-case, which depends on how the two lanes interleave on the worker.
        assert len(notes) >= 2 and all(peer in note for note in notes), notes
    assert RunEvent.objects.filter(run=run, event_type="race.standings.injected").count() >= 4  # one per case at least

"""The event sink flushes on time: a long tool call's events are stored while it runs, and kept when the
worker running it is killed; every event says which attempt it belongs to."""

from __future__ import annotations

import datetime as dt
import json
import time

import pytest

from engine.events import SYSTEM_RUN_COMPLETED, TOOL_CALL_STARTED
from engine.redact import REDACTED, Redactor
from engine.types import Event
from runs import queue, services
from runs.events import RunEventSink
from runs.models import CaseRun, CaseStatus, Run, RunEvent, RunStatus
from runs.pipeline.native import AttemptPulse
from runs.tests.factories import make_deployment, native_pack_yaml, publish
from runs.tests.worker import Worker, wait_for

SECRET = "flush-secret-9a8b7c6d5e"


def _event(n: int, text: str = "") -> Event:
    return Event(
        event_id=f"test:flush:{n}",
        event_type="model.output.delta",
        source="native_engine",
        occurred_at="2026-01-01T00:00:00Z",
        payload={"text_delta": text or f"delta {n}"},
        case_key="case-0",
    )


def _case(workspace, admin) -> CaseRun:
    version = publish(workspace, admin, native_pack_yaml(cases=1))
    run = services.run_create(workspace=workspace, user=admin, pack_version=version, deployment_ids=[make_deployment(workspace).pk])
    return CaseRun.objects.get(run=run)


def _sink(case: CaseRun, *, interval: float, attempt: int = 2) -> RunEventSink:
    return RunEventSink(
        run_id=case.run_id, lane_id=case.lane_id, case_run_id=case.pk, attempt=attempt, redactor=Redactor([SECRET]), interval=interval
    )


@pytest.mark.django_db(transaction=True)
def test_events_reach_the_database_on_time_without_a_next_event(workspace, admin):
    queue.capture([])
    try:
        case = _case(workspace, admin)
        sink = _sink(case, interval=0.2)
        pulse = AttemptPulse(case.pk, 2, sink, heartbeat_seconds=5).start()
        try:
            sink(_event(1))  # the first event of the interval waits in the buffer…
            sink(_event(2))
            assert RunEvent.objects.filter(case_run=case).count() == 0
            # …and is written by the timer, while the engine is busy elsewhere (a long tool call)
            assert wait_for(lambda: RunEvent.objects.filter(case_run=case).count() == 2, timeout=5, interval=0.05)
        finally:
            pulse.stop()
        rows = list(
            RunEvent.objects.filter(case_run=case).order_by("sequence_number").values_list("event_id", "attempt", "sequence_number")
        )
        assert [(e, a) for e, a, _ in rows] == [("test:flush:1", 2), ("test:flush:2", 2)]
        sink(_event(3))
        sink.flush()
        assert RunEvent.objects.filter(case_run=case).count() == 3
    finally:
        queue.capture(None)


@pytest.mark.django_db(transaction=True)
def test_the_sink_masks_a_secret_split_across_consecutive_events(workspace, admin):
    queue.capture([])
    try:
        case = _case(workspace, admin)
        sink = _sink(case, interval=60)
        sink(_event(1, f"the token is {SECRET[:9]}"))
        sink(_event(2, f"{SECRET[9:]} (end)"))
        sink.flush()
        texts = list(RunEvent.objects.filter(case_run=case).order_by("sequence_number").values_list("payload", flat=True))
        assert [t["text_delta"] for t in texts] == [f"the token is {REDACTED}", f"{REDACTED} (end)"]
    finally:
        queue.capture(None)


@pytest.mark.django_db
def test_inside_a_transaction_the_sink_does_not_flush_from_another_thread(workspace, admin):
    case = _case(workspace, admin)
    sink = _sink(case, interval=0.05)
    pulse = AttemptPulse(case.pk, 2, sink, heartbeat_seconds=5).start()
    assert not pulse.flush_on_time
    pulse.stop()
    sink(_event(1))
    sink.flush()
    assert RunEvent.objects.filter(case_run=case).count() == 1


@pytest.mark.django_db
def test_the_sink_keeps_each_event_as_a_read_of_the_stored_event_gives_it(workspace, admin, settings):
    """What the worker scores a case from (``RunEventSink.evidence``) is what scoring reads back from
    the database: masked, oversized payloads whole (not their stored-file stub), in stored order."""
    from django.db import transaction

    from scoring.services import evidence_for_case_run

    settings.RUN_EVENT_INLINE_MAX_BYTES = 200
    case = _case(workspace, admin)
    CaseRun.objects.filter(pk=case.pk).update(attempt=2, status=CaseStatus.COMPLETED)
    case.refresh_from_db()
    sink = RunEventSink(
        run_id=case.run_id, lane_id=case.lane_id, case_run_id=case.pk, attempt=2, redactor=Redactor([SECRET]), interval=60, keep=True
    )
    sink(_event(1, f"the token is {SECRET}"))
    sink(_event(2, "x" * 1000))  # stored in a file, its row holds a stub
    sink.flush()  # written mid-attempt, like the pulse's timed flush
    sink(_event(3, "the last one"))
    with transaction.atomic():
        sink.write_final()  # the finish's last batch
    stored = evidence_for_case_run(case).events  # read back from the database and hydrated
    kept = evidence_for_case_run(case, events=sink.evidence).events
    assert RunEvent.objects.get(case_run=case, event_id="test:flush:2").payload_ref  # the big one really is a file
    assert [e["event_id"] for e in kept] == [e["event_id"] for e in stored] == ["test:flush:1", "test:flush:2", "test:flush:3"]
    assert [e["payload"] for e in kept] == [e["payload"] for e in stored]
    assert [e["occurred_at"] for e in kept] == [e["occurred_at"] for e in stored]
    evidence = sink.evidence or []
    assert evidence[0]["payload"]["text_delta"] == f"the token is {REDACTED}" and evidence[1]["payload"]["text_delta"] == "x" * 1000
    assert [e["sequence_number"] for e in evidence] == sorted(e["sequence_number"] for e in evidence)


@pytest.mark.django_db
def test_a_sink_that_keeps_nothing_has_no_evidence(workspace, admin):
    case = _case(workspace, admin)
    sink = _sink(case, interval=60)
    sink(_event(1))
    assert sink.evidence is None and sink.count == 1


# -- a real worker killed during a long tool call --------------------------------------------

LONG_CALL = [
    {"tool": "exec", "args": {"command": ["sleep", "6"]}},
    {"tool": "read_file", "args": {"path": "/workspace/notes.txt"}},
    {"submit": "{{last_result}}"},
]


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_killed_attempts_events_are_kept_and_say_which_attempt_they_belong_to(workspace, admin, broker_queue, api_client_for):
    source = native_pack_yaml(cases=1).replace("allowed_tool_kinds: [file]", "allowed_tool_kinds: [file]\n    allow_shell: true")
    version = publish(workspace, admin, source)
    deployment = make_deployment(workspace, script=LONG_CALL)
    first = Worker(queue=broker_queue).start()
    try:
        run = services.run_create(workspace=workspace, user=admin, pack_version=version, deployment_ids=[deployment.pk])
        # The exec call sleeps; its tool.call.started is stored while it runs (no next event comes).
        started = RunEvent.objects.filter(run=run, event_type=TOOL_CALL_STARTED, attempt=1)
        assert wait_for(lambda: started.exists(), timeout=120), list(RunEvent.objects.filter(run=run).values_list("event_type", flat=True))
        assert started.get().payload["tool_name"] == "exec"
    finally:
        first.kill()
    killed = list(RunEvent.objects.filter(run=run, attempt=1).order_by("sequence_number").values_list("event_type", flat=True))
    assert killed[0] == "system.run.started" and killed[-1] == TOOL_CALL_STARTED and "model.call.completed" in killed
    time.sleep(1.5)
    services.run_reap(stale_after=dt.timedelta(seconds=1), lost_after=dt.timedelta(seconds=1))
    second = Worker(queue=broker_queue).start()
    try:
        assert wait_for(lambda: Run.objects.get(pk=run.pk).is_terminal, timeout=180, interval=0.5)
    finally:
        second.stop()
    run.refresh_from_db()
    case = CaseRun.objects.get(run=run)
    assert run.status == RunStatus.COMPLETED and case.status == CaseStatus.COMPLETED and case.attempt == 2
    # the killed attempt's events are still there, numbered before the retry's, each with its attempt
    assert list(RunEvent.objects.filter(run=run, attempt=1).order_by("sequence_number").values_list("event_type", flat=True)) == killed
    assert RunEvent.objects.filter(run=run, attempt=2, event_type=SYSTEM_RUN_COMPLETED).count() == 1
    seqs = list(RunEvent.objects.filter(lane__run=run).order_by("sequence_number").values_list("sequence_number", flat=True))
    assert seqs == list(range(1, len(seqs) + 1))
    export = api_client_for(admin).get(f"/api/v1/workspaces/{workspace.slug}/runs/{run.pk}/events.jsonl")
    lines = [json.loads(line) for line in b"".join(export.streaming_content).decode().splitlines()]
    assert {line["attempt"] for line in lines if line["case_run_id"] == case.pk} == {1, 2}

"""Both halves of every ``connection.vendor`` branch of the run record and the pipeline, on this database.

Each branch below has a PostgreSQL half and a SQLite half; a developer's run (SQLite) never
executes the first and CI's main run (PostgreSQL) never the second, so these are marked
``both_databases`` and CI runs them on both:

- the lane row's dispatch state (``runs.events.LaneRow``): the in-flight limit read from the snapshot's
  JSON by the locking statement (``->>`` / ``json_extract``), ``SELECT … FOR UPDATE`` against a
  no-op ``UPDATE … RETURNING``;
- the pick (``runs.pipeline.advance``): ``GREATEST`` / ``MAX`` around the free slots (a negative
  ``LIMIT`` is an error on PostgreSQL and *no limit* on SQLite);
- the claim (``runs.lifecycle.case_claim``): the compare-and-set and its read in one statement on
  PostgreSQL, two elsewhere;
- the event insert (``runs.events``): ``COPY`` against ``bulk_create``.

The statement fast paths' own branches are ``runs/tests/test_adapter_statements.py``.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from django.db.models import F
from django.utils import timezone

from engine.types import Event
from runs import services
from runs.events import LaneRow, run_events_append
from runs.lifecycle import case_claim
from runs.models import CaseRun, CaseStatus, Lane, LaneStatus, RunEvent, RunStatus
from runs.pipeline.advance import lane_dispatch
from runs.tests.factories import make_deployment, native_pack_yaml, publish

pytestmark = [pytest.mark.django_db, pytest.mark.both_databases]


@pytest.fixture
def lane(workspace, admin, tasks) -> Lane:
    """The executing lane of a started run: 5 cases, at most 2 in flight, the first 2 dispatched."""
    version = publish(workspace, admin, native_pack_yaml(cases=5))
    deployment = make_deployment(workspace, name="branches", max_in_flight_cases=2)
    run = services.run_create(workspace=workspace, user=admin, pack_version=version, deployment_ids=[deployment.pk])
    tasks.drain(limit=1)  # run_start
    tasks.items.clear()
    return Lane.objects.get(run=run)


def _limit(lane: Lane, value: Any) -> None:
    snapshot = dict(lane.snapshot)
    snapshot["runtime_profile"] = {**snapshot["runtime_profile"], "max_in_flight_cases": value}
    Lane.objects.filter(pk=lane.pk).update(snapshot=snapshot)


def _dispatched(lane: Lane) -> list[int]:
    return list(CaseRun.objects.filter(lane=lane, dispatched_at__isnull=False).order_by("position").values_list("position", flat=True))


def test_the_locking_statements_read_the_lanes_dispatch_state(lane):
    row = LaneRow(lane.pk)
    state = row.state()
    assert state is not None
    assert (state.lane_status, state.run_status, state.max_in_flight) == (LaneStatus.EXECUTING, RunStatus.RUNNING, 2)
    _limit(lane, 5)
    start = Lane.objects.get(pk=lane.pk).next_sequence
    first, with_state = row.reserve(3, with_state=True)
    assert first == start and with_state == row.state() and with_state is not None and with_state.max_in_flight == 5
    assert row.reserve(1) == (start + 3, None)
    _limit(lane, "not a number")  # read as it is stored: the default then
    assert row.state().max_in_flight == 8
    assert LaneRow(lane.pk + 1000).state() is None


def test_a_pick_never_takes_more_than_the_lane_has_free(lane):
    assert _dispatched(lane) == [0, 1]
    _limit(lane, 1)  # fewer slots than cases in flight: the free count is negative
    assert (lane_dispatch(lane.pk).count, _dispatched(lane)) == (0, [0, 1])
    _limit(lane, 3)
    assert (lane_dispatch(lane.pk).count, _dispatched(lane)) == (1, [0, 1, 2])
    _limit(lane, 10)
    result = lane_dispatch(lane.pk)
    assert (result.count, result.maybe_done, _dispatched(lane)) == (2, False, [0, 1, 2, 3, 4])
    CaseRun.objects.filter(lane=lane).update(status=CaseStatus.COMPLETED)
    result = lane_dispatch(lane.pk)
    assert (result.count, result.maybe_done) == (0, True)  # nothing left, nothing in flight


def _claimed_fields(case_run: CaseRun) -> dict[str, Any]:
    return {
        "row": {f.attname: getattr(case_run, f.attname) for f in CaseRun._meta.concrete_fields},
        "related": (case_run.run.pk, case_run.lane.pk, case_run.case.pk, case_run.run.status, case_run.lane.status),
        "annotations": (case_run.pack_checksum, case_run.input_set_key),  # type: ignore[attr-defined]
    }


def test_a_claim_returns_the_row_it_claimed_and_claims_once(lane, django_assert_num_queries):
    first = CaseRun.objects.filter(lane=lane).order_by("position").first()
    assert first is not None
    claimed = case_claim(case_run_id=first.pk)
    assert claimed is not None and (claimed.status, claimed.attempt) == (CaseStatus.RUNNING, 1)
    expected = (
        CaseRun.objects.select_related("run", "lane", "case")
        .annotate(pack_checksum=F("run__pack_version__manifest_checksum"), input_set_key=F("run__input_set__key"))
        .get(pk=first.pk)
    )
    with django_assert_num_queries(0):
        assert _claimed_fields(claimed) == _claimed_fields(expected)
    assert case_claim(case_run_id=first.pk) is None  # a second delivery of the same task
    assert CaseRun.objects.get(pk=first.pk).attempt == 1
    assert case_claim(case_run_id=first.pk + 1000) is None


def test_an_event_batch_is_stored_as_given(lane):
    now = timezone.now().replace(microsecond=123456)
    payloads: list[dict[str, Any]] = [
        {"text": "note ✓ 41", "nested": {"list": [1, 2.5, None, True], "empty": {}}},
        {"quote": 'a "b" \\ c\nd\te', "big": 2**53},
        {},
    ]
    events = [
        Event(
            event_id=f"branches:{lane.pk}:{i}",
            event_type="model.call.completed",
            source="agent",
            occurred_at=(now + dt.timedelta(seconds=i)).isoformat(),
            payload=payload,
            case_key="case-1",
        )
        for i, payload in enumerate(payloads)
    ]
    stored: list[dict[str, Any]] = []
    assert run_events_append(run_id=lane.run_id, lane_id=lane.pk, case_run_id=None, attempt=1, events=events, stored=stored) == 3
    rows = list(RunEvent.objects.filter(lane=lane, event_id__startswith="branches:").order_by("sequence_number"))
    assert [r.event_id for r in rows] == [e.event_id for e in events]
    assert [r.sequence_number for r in rows] == [rows[0].sequence_number + i for i in range(3)]
    for row, event, kept in zip(rows, events, stored, strict=True):
        assert {k: v for k, v in row.payload.items() if k != "schema_version"} == event.payload
        assert row.occurred_at == dt.datetime.fromisoformat(event.occurred_at)
        assert (row.event_type, row.source, row.case_key, row.attempt, row.payload_ref) == (event.event_type, "agent", "case-1", 1, "")
        assert (kept["event_id"], kept["sequence_number"], kept["payload"]) == (row.event_id, row.sequence_number, row.payload)
    # A redelivered batch stores nothing twice and leaves no gap.
    assert run_events_append(run_id=lane.run_id, lane_id=lane.pk, case_run_id=None, attempt=1, events=events) == 0
    assert Lane.objects.get(pk=lane.pk).next_sequence == rows[-1].sequence_number + 1

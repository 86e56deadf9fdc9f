"""Reading events through a cursor never skips one (docs/runs.md "Reading events"): on PostgreSQL
an event's id is taken before its transaction commits, so two lanes committing concurrently can
make a lower id visible after a higher one was read; the readers stop at the run's commit horizon."""

from __future__ import annotations

import threading
import time

import pytest
from django.db import connection, connections, transaction

from engine.types import Event
from runs import selectors, services
from runs.events import run_events_append
from runs.models import RunEvent
from runs.tests.factories import make_deployment, native_pack_yaml, publish

pytestmark = pytest.mark.django_db(transaction=True)


def _event(name: str) -> Event:
    return Event(
        event_id=f"cursor:{name}",
        event_type="model.output.delta",
        source="native_engine",
        occurred_at="2026-01-01T00:00:00Z",
        payload={"text_delta": name},
        case_key="case-0",
    )


@pytest.fixture
def two_lanes(workspace, admin):
    version = publish(workspace, admin, native_pack_yaml(cases=1))
    lanes = [make_deployment(workspace, name="a").pk, make_deployment(workspace, name="b").pk]
    run = services.run_create(workspace=workspace, user=admin, pack_version=version, deployment_ids=lanes)
    return run, list(run.lanes.order_by("pk").values_list("pk", flat=True))


def test_a_lower_id_committed_after_a_higher_one_is_not_skipped(two_lanes):
    if connection.vendor != "postgresql":
        pytest.skip("SQLite commits one writer at a time, in id order: nothing to skip there")
    run, (lane_a, lane_b) = two_lanes
    inserted = threading.Event()
    release = threading.Event()

    def slow_lane() -> None:  # lane A takes the lower id, then commits only when told
        try:
            with transaction.atomic():
                run_events_append(run_id=run.pk, lane_id=lane_a, case_run_id=None, attempt=1, events=[_event("early-id")])
                inserted.set()
                release.wait(10)
        finally:
            connections.close_all()

    writer = threading.Thread(target=slow_lane)
    writer.start()
    assert inserted.wait(10)
    run_events_append(run_id=run.pk, lane_id=lane_b, case_run_id=None, attempt=1, events=[_event("late-id")])
    ids = dict(RunEvent.objects.filter(run=run).values_list("event_id", "pk"))
    assert list(ids) == ["cursor:late-id"]  # only the higher id is visible: a plain "id > after" reader would move past the other

    timer = threading.Timer(0.5, release.set)
    timer.start()
    started = time.monotonic()
    read = selectors.run_events_after(run=run, after=0)  # waits for lane A's writer, then sees both
    waited = time.monotonic() - started
    writer.join(10)
    timer.cancel()
    assert [event.event_id for event in read] == ["cursor:early-id", "cursor:late-id"]
    assert read[0].pk < read[1].pk and 0.3 < waited < 5


def test_the_cursor_reads_every_event_once_while_lanes_commit_concurrently(two_lanes):
    run, lanes = two_lanes
    per_lane = 40
    seen: list[str] = []
    done = threading.Event()

    def writer(lane_id: int) -> None:
        try:
            for n in range(per_lane):
                run_events_append(run_id=run.pk, lane_id=lane_id, case_run_id=None, attempt=1, events=[_event(f"{lane_id}-{n}")])
        finally:
            connections.close_all()

    threads = [threading.Thread(target=writer, args=(lane_id,)) for lane_id in lanes]
    for thread in threads:
        thread.start()
    after = 0
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        finished = not any(thread.is_alive() for thread in threads)
        events = selectors.run_events_after(run=run, after=after, limit=1000)
        seen.extend(event.event_id for event in events)
        after = events[-1].pk if events else after
        if finished and not events:
            done.set()
            break
    assert done.is_set()
    expected = {f"cursor:{lane_id}-{n}" for lane_id in lanes for n in range(per_lane)}
    assert len(seen) == len(set(seen)) and set(seen) == expected

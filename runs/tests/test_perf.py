"""Per-case database cost of a run, pinned so that a regression fails CI (docs/runs.md, Throughput).

The statement counts are for one case of a native pack with five tool calls, on the test
database; PostgreSQL writes the events with one ``COPY`` (counted as one statement).
``bench/run_statements.py`` prints the actual counts against these ceilings.
"""

from __future__ import annotations

import pytest
from django.db import connection

from runs import pipeline, services
from runs.events import run_events_append
from runs.models import CaseRun, LaneStatus, RunEvent, RunStatus, ScoreStatus
from runs.tests.factories import make_deployment, native_pack_yaml, publish
from scoring.models import CaseScore

FIVE_TOOLS = [{"tool": "read_file", "args": {"path": "/workspace/notes.txt"}}] * 5 + [{"submit": "{{last_result}}"}]

# Claim 2 (CAS, read), secrets 0 (the workspace had none when the run was created and the run
# names none: docs/secrets.md), the provider account's limits 0 (none set, runs/throttle), then
# one transaction of 7: BEGIN, finish, reserve the batch's numbers (which locks the lane row and
# reads the lane's state for dispatch), insert the batch (no check for stored ids: the sink's
# events are new), the workspace's executing lanes with their limits and counts (fair scheduling),
# pick + mark the next cases, COMMIT; on PostgreSQL one more: the workspace's dispatch lock.
_WORKSPACE_LOCK = 1 if connection.vendor == "postgresql" else 0
EXECUTE_MAX = 9 + _WORKSPACE_LOCK
# Scored inline, the score joins the finish's transaction (its case-row fields in the finish,
# the CaseScore upsert, its events in the same batch); no lane-state read after it.
EXECUTE_AND_SCORE_MAX = 10 + _WORKSPACE_LOCK
# The separate finalize task: the case read, its events read, score 4, events 5, lane-state read.
FINALIZE_MAX = 12


@pytest.fixture
def run_parts(workspace, admin, tasks):
    version = publish(workspace, admin, native_pack_yaml(cases=6))
    deployment = make_deployment(workspace, name="five", script=FIVE_TOOLS, max_in_flight_cases=2)
    run = services.run_create(workspace=workspace, user=admin, pack_version=version, deployment_ids=[deployment.pk])
    tasks.drain(limit=1)  # run_start
    return run, tasks


def _next_case(tasks) -> int:
    item = next(i for i in tasks.items if i[0] == "runs.case_run_execute")
    tasks.items.remove(item)
    return item[1][0]


@pytest.mark.django_db
def test_a_case_costs_a_bounded_number_of_statements(run_parts, django_assert_max_num_queries):
    run, tasks = run_parts
    pipeline.case_run_execute(case_run_id=_next_case(tasks))  # warms the worker's manifest cache
    case_run_id = _next_case(tasks)
    with django_assert_max_num_queries(EXECUTE_MAX):
        assert pipeline.case_run_execute(case_run_id=case_run_id) == "completed"
    with django_assert_max_num_queries(FINALIZE_MAX):
        pipeline.case_run_finalize(case_run_id=case_run_id)
    assert CaseRun.objects.get(pk=case_run_id).score_status == ScoreStatus.SCORED


@pytest.mark.django_db
def test_a_case_scored_inline_costs_a_bounded_number_of_statements(run_parts, django_assert_max_num_queries):
    run, tasks = run_parts
    pipeline.case_run_execute(case_run_id=_next_case(tasks), score_inline=True)
    case_run_id = _next_case(tasks)
    with django_assert_max_num_queries(EXECUTE_AND_SCORE_MAX):
        assert pipeline.case_run_execute(case_run_id=case_run_id, score_inline=True) == "completed"
    assert CaseRun.objects.get(pk=case_run_id).score_status == ScoreStatus.SCORED
    assert "runs.case_run_finalize" not in tasks.names()


def _scores(run) -> dict[str, tuple]:
    return {
        s.case_run.case_key: (s.passed, s.overall_score, s.validity, s.document["metric_details"], s.document["dimensions"])
        for s in CaseScore.objects.filter(case_run__run=run).select_related("case_run")
    }


@pytest.mark.django_db
def test_inline_scoring_gives_the_finalize_task_s_scores_and_gap_free_sequences(workspace, admin, tasks):
    version = publish(workspace, admin, native_pack_yaml(cases=5))
    deployment = make_deployment(workspace, name="five", script=FIVE_TOOLS, max_in_flight_cases=2)
    inline = services.run_create(workspace=workspace, user=admin, pack_version=version, deployment_ids=[deployment.pk])
    tasks.drain_inline()
    queued = services.run_create(workspace=workspace, user=admin, pack_version=version, deployment_ids=[deployment.pk])
    tasks.drain()
    for run in (inline, queued):
        run.refresh_from_db()
        assert run.status == RunStatus.COMPLETED
        lane = run.lanes.get()
        assert lane.status == LaneStatus.COMPLETED
        sequences = sorted(RunEvent.objects.filter(lane=lane).values_list("sequence_number", flat=True))
        assert sequences == list(range(sequences[0], sequences[0] + len(sequences)))
        assert lane.next_sequence == sequences[-1] + 1
    assert _scores(inline) == _scores(queued) and len(_scores(inline)) == 5
    assert RunEvent.objects.filter(run=inline).count() == RunEvent.objects.filter(run=queued).count()


@pytest.mark.django_db
def test_the_reaper_rescores_a_case_its_worker_finished_but_never_scored(run_parts):
    import datetime as dt

    from django.utils import timezone

    run, tasks = run_parts
    case_run_id = _next_case(tasks)
    pipeline.case_run_execute(case_run_id=case_run_id)
    tasks.items.clear()  # the worker died before scoring: nothing queued for it
    CaseRun.objects.filter(pk=case_run_id).update(finished_at=timezone.now() - dt.timedelta(minutes=5))
    assert services.run_reap()["rescored"] == 1
    assert ("runs.case_run_finalize", (case_run_id,)) in [(n, a) for n, a, _ in tasks.items]


@pytest.mark.django_db
def test_a_redelivered_event_batch_gives_its_numbers_back(run_parts):
    from engine.types import Event

    run, _ = run_parts
    lane = run.lanes.get()
    events = [
        Event(
            event_id=f"x:{i}",
            event_type="model.call.started",
            source="agent",
            occurred_at="2026-01-01T00:00:00Z",
            payload={"i": i},
            case_key="c",
        )
        for i in range(3)
    ]
    assert run_events_append(run_id=run.pk, lane_id=lane.pk, case_run_id=None, attempt=1, events=events[:2]) == 2
    assert run_events_append(run_id=run.pk, lane_id=lane.pk, case_run_id=None, attempt=1, events=events) == 1
    lane.refresh_from_db()
    sequences = sorted(RunEvent.objects.filter(lane=lane).values_list("sequence_number", flat=True))
    assert sequences == list(range(sequences[0], sequences[0] + 3)) and lane.next_sequence == sequences[-1] + 1
    assert connection.vendor in ("sqlite", "postgresql")

"""Per-case persistence (docs/performance.md): one event batch per case with its score, the lane row
written once, no duplicated deltas, dispatch through partial indexes, and no evidence lost."""

from __future__ import annotations

import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from runs import pipeline, services
from runs.models import CaseRun, CaseStatus, LaneStatus, RunEvent, RunStatus, ScoreStatus
from runs.pipeline.advance import _IN_FLIGHT_SQL, _LANE_LIMIT, _PICK_SQL, _WORKSPACE_LANES_SQL
from runs.tests.factories import make_deployment, native_pack_yaml, publish
from scoring.models import CaseScore

FIVE_TOOLS = [{"tool": "read_file", "args": {"path": "/workspace/notes.txt"}}] * 5 + [{"submit": "{{last_result}}"}]


def _next_case(tasks) -> int:
    item = next(i for i in tasks.items if i[0] == "runs.case_run_execute")
    tasks.items.remove(item)
    return item[1][0]


@pytest.fixture
def started(workspace, admin, tasks):
    version = publish(workspace, admin, native_pack_yaml(cases=4))
    deployment = make_deployment(workspace, name="five", script=FIVE_TOOLS, max_in_flight_cases=2)
    run = services.run_create(workspace=workspace, user=admin, pack_version=version, deployment_ids=[deployment.pk])
    tasks.drain(limit=1)  # run_start
    return run


@pytest.mark.django_db
def test_a_case_scored_inline_writes_its_events_and_its_score_in_one_batch(started, tasks):
    case_run_id = _next_case(tasks)
    with CaptureQueriesContext(connection) as queries:
        assert pipeline.case_run_execute(case_run_id=case_run_id, score_inline=True) == "completed"
    # An executemany (SQLite's event insert) is logged as "N times: <sql>".
    statements = [re.sub(r"^\d+ times: ", "", q["sql"]) for q in queries.captured_queries]
    assert sum("next_sequence = next_sequence +" in sql for sql in statements) == 1  # the lane row: written once
    assert sum(sql.startswith(('INSERT INTO "runs_runevent"', "COPY runs_runevent")) for sql in statements) == 1
    events = list(RunEvent.objects.filter(case_run_id=case_run_id).order_by("sequence_number").values_list("event_type", "sequence_number"))
    types = [t for t, _ in events]
    assert types[0] == "system.run.started" and "system.run.completed" in types
    assert types[-1] == "scoring.completed" and "scoring.started" in types and "scoring.metric.recorded" in types
    sequences = [n for _, n in events]
    assert sequences == list(range(sequences[0], sequences[0] + len(sequences)))
    case = CaseRun.objects.get(pk=case_run_id)
    assert case.status == CaseStatus.COMPLETED and case.score_status == ScoreStatus.SCORED and case.passed is True
    assert CaseScore.objects.get(case_run_id=case_run_id).overall_score == case.score == 1.0


@pytest.mark.django_db
def test_a_non_streaming_provider_leaves_no_delta_events_and_every_step_in_the_replay(started, tasks, client, admin, workspace):
    tasks.drain_inline()
    run = started
    run.refresh_from_db()
    assert run.status == RunStatus.COMPLETED
    types = list(RunEvent.objects.filter(run=run).values_list("event_type", flat=True))
    assert "model.output.delta" not in types
    assert types.count("model.call.completed") == 4 * 6 and types.count("tool.call.completed") == 4 * 6
    case_run = CaseRun.objects.filter(run=run).order_by("position").first()
    client.force_login(admin)
    page = client.get(reverse("runs:case_replay", args=[workspace.slug, run.pk, case_run.pk]))
    assert page.status_code == 200
    body = page.content.decode()
    assert body.count("read_file") >= 5 and "submit" in body


@pytest.mark.django_db
def test_a_scoring_failure_inline_is_recorded_with_the_case_and_the_lane_still_finishes(started, tasks, monkeypatch):
    from scoring import services as scoring

    def broken(*args, **kwargs):
        raise RuntimeError("validator exploded")

    monkeypatch.setattr(scoring.cases, "score_case", broken)  # the name the case scoring uses
    tasks.drain_inline()
    run = started
    run.refresh_from_db()
    lane = run.lanes.get()
    assert lane.status in (LaneStatus.COMPLETED, LaneStatus.FAILED) and run.status in (RunStatus.COMPLETED, RunStatus.FAILED)
    assert set(CaseRun.objects.filter(run=run).values_list("score_status", flat=True)) == {ScoreStatus.ERRORED}
    failed = RunEvent.objects.filter(run=run, event_type="scoring.failed")
    assert failed.count() == 4 and "validator exploded" in str(failed.first().payload)
    assert not CaseScore.objects.filter(case_run__run=run).exists()


@pytest.mark.django_db
def test_a_case_that_lost_its_claim_keeps_its_events_but_records_no_result(started, tasks, monkeypatch):
    from runs.pipeline import execute

    case_run_id = _next_case(tasks)
    original = execute.case_close  # type: ignore[attr-defined]  # the name the finish uses

    def lost(**kwargs):  # another worker re-claimed the case meanwhile
        CaseRun.objects.filter(pk=kwargs["case_run_id"]).update(attempt=kwargs["attempt"] + 1)
        return original(**kwargs)

    monkeypatch.setattr(execute, "case_close", lost)
    assert pipeline.case_run_execute(case_run_id=case_run_id, score_inline=True) == "superseded"
    types = set(RunEvent.objects.filter(case_run_id=case_run_id).values_list("event_type", flat=True))
    assert "system.run.completed" in types and not any(t.startswith("scoring.") for t in types)
    case = CaseRun.objects.get(pk=case_run_id)
    assert case.status == CaseStatus.RUNNING and case.score_status == ScoreStatus.PENDING
    assert not CaseScore.objects.filter(case_run_id=case_run_id).exists()


@pytest.mark.django_db
def test_inline_and_finalize_scoring_store_the_same_events_apart_from_their_order(workspace, admin, tasks):
    version = publish(workspace, admin, native_pack_yaml(cases=3))
    deployment = make_deployment(workspace, name="five", script=FIVE_TOOLS, max_in_flight_cases=2)
    inline = services.run_create(workspace=workspace, user=admin, pack_version=version, deployment_ids=[deployment.pk])
    tasks.drain_inline()
    queued = services.run_create(workspace=workspace, user=admin, pack_version=version, deployment_ids=[deployment.pk])
    tasks.drain()

    def shape(run):
        rows = RunEvent.objects.filter(run=run, case_run__isnull=False).values_list("case_run__case_key", "event_type")
        return sorted(rows)

    assert shape(inline) == shape(queued)


@pytest.mark.django_db
def test_dispatch_counts_and_picks_through_the_partial_indexes(started):
    if connection.vendor != "sqlite":
        pytest.skip("the plan is checked on SQLite here; PostgreSQL's is in docs/performance.md")
    lane_id = started.lanes.get().pk
    with connection.cursor() as cursor:
        cursor.execute("EXPLAIN QUERY PLAN " + _IN_FLIGHT_SQL, [lane_id])
        count_plan = " ".join(str(row) for row in cursor.fetchall())
        cursor.execute("EXPLAIN QUERY PLAN " + _PICK_SQL.format(skip_locked=""), [None, lane_id, 3])
        pick_plan = " ".join(str(row) for row in cursor.fetchall())
        cursor.execute("EXPLAIN QUERY PLAN " + _WORKSPACE_LANES_SQL.format(limit=_LANE_LIMIT["sqlite"]), [64, started.workspace_id])
        lanes_plan = " ".join(str(row) for row in cursor.fetchall())
    assert "caserun_in_flight" in count_plan
    assert "caserun_to_dispatch" in pick_plan
    # the workspace's executing lanes, then each lane's two counts: all through indexes, no table scanned
    assert "caserun_in_flight" in lanes_plan, lanes_plan
    assert not re.search(r"SCAN (runs_caserun|runs_run|runs_runagent|r|l)\b", lanes_plan), lanes_plan


@pytest.mark.django_db
def test_dispatch_fills_free_slots_in_case_order(started, tasks):
    lane = started.lanes.get()
    dispatched = list(
        CaseRun.objects.filter(lane=lane, dispatched_at__isnull=False).order_by("position").values_list("position", flat=True)
    )
    assert dispatched == [0, 1]  # max_in_flight_cases=2
    assert pipeline.lane_dispatch(lane.pk).count == 0  # no free slot
    pipeline.case_run_execute(case_run_id=_next_case(tasks), score_inline=True)  # finishing one dispatches the next
    dispatched = list(
        CaseRun.objects.filter(lane=lane, dispatched_at__isnull=False).order_by("position").values_list("position", flat=True)
    )
    assert dispatched == [0, 1, 2]

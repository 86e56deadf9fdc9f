"""Conformance of the statement adapter (``runs.adapters.statements``): each fast path reads and
writes exactly what its public Django equivalent does, on this database.

Marked ``both_databases``: CI runs them on PostgreSQL (where the prepared cursor binds on the
server and the claim is one statement) and again on SQLite. Every test runs twice, with the
fast paths on (``FAST``, the default at the checked versions) and with the public fallback that
an unknown Django or psycopg major version gets.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from django.db import connection
from django.db.models import F, Model
from django.utils import timezone

from runs import services
from runs.adapters import statements
from runs.adapters.statements import PrecompiledGet, RowUpdate, RowUpsert, prepared_cursor
from runs.models import CaseRun, CaseStatus
from runs.tests.factories import make_deployment, native_pack_yaml, publish
from scoring.models import CaseScore

pytestmark = [pytest.mark.django_db, pytest.mark.both_databases]


@pytest.fixture(params=[True, False], ids=["fast", "public-fallback"])
def fast(request, monkeypatch) -> bool:
    monkeypatch.setattr(statements, "FAST", request.param)
    return request.param


@pytest.fixture
def case_runs(workspace, admin, tasks) -> list[CaseRun]:
    """Four queued case runs of one lane of a started run, in position order."""
    version = publish(workspace, admin, native_pack_yaml(cases=4))
    deployment = make_deployment(workspace, name="conformance", max_in_flight_cases=2)
    run = services.run_create(workspace=workspace, user=admin, pack_version=version, deployment_ids=[deployment.pk])
    tasks.drain(limit=1)  # run_start: lanes executing, the first two cases dispatched
    tasks.items.clear()
    return list(CaseRun.objects.filter(run=run).order_by("position"))


def _claim_queryset() -> Any:
    # The shape of the worker's claim (runs.lifecycle): three related models and two annotations.
    return CaseRun.objects.select_related("run", "lane", "case").annotate(
        pack_checksum=F("run__pack_version__manifest_checksum"), input_set_key=F("run__input_set__key")
    )


def _fields(obj: Model, *, without: tuple[str, ...] = ()) -> dict[str, Any]:
    return {f.attname: getattr(obj, f.attname) for f in obj._meta.concrete_fields if f.attname not in without}


def _loaded(case_run: Model) -> dict[str, Any]:
    """Everything a claimed case run carries: its fields, its three related rows, its annotations."""
    return {
        "case_run": _fields(case_run),
        "run": _fields(case_run.run),  # type: ignore[attr-defined]
        "lane": _fields(case_run.lane),  # type: ignore[attr-defined]
        "case": _fields(case_run.case),  # type: ignore[attr-defined]
        "annotations": (case_run.pack_checksum, case_run.input_set_key),  # type: ignore[attr-defined]
        "db": case_run._state.db,
        "adding": case_run._state.adding,
    }


# Columns that differ between two case runs of one lane whatever is written to them.
_OWN = ("id", "case_id", "case_key", "position", "dispatched_at")


def test_the_prepared_cursor_reads_what_a_django_cursor_reads(fast, case_runs, django_assert_num_queries):
    sql = "SELECT id, status, position, dispatched_at FROM runs_caserun WHERE lane_id = %s AND position >= %s ORDER BY position"
    args = [case_runs[0].lane_id, 1]
    with connection.cursor() as cursor:
        cursor.execute(sql, args)
        expected = cursor.fetchall()
    with django_assert_num_queries(1), prepared_cursor() as cursor:  # logged and counted like any statement
        cursor.execute(sql, args)
        assert cursor.fetchall() == expected
        server_side = type(cursor.cursor).__name__ == "ServerBindingCursor"
    assert len(expected) == 3
    assert server_side == (fast and connection.vendor == "postgresql")


def test_postgresql_prepares_a_hot_statement_after_the_threshold(case_runs):
    if connection.vendor != "postgresql":
        pytest.skip("SQLite has no server-side statements: the prepared cursor is the connection's own")
    threshold = connection.settings_dict.get("OPTIONS", {}).get("prepare_threshold")
    if threshold is None:
        pytest.skip("DATABASE_PREPARE_THRESHOLD=off")
    sql = "SELECT status FROM runs_caserun WHERE id = %s AND attempt >= %s"
    for _ in range(threshold + 1):
        with prepared_cursor() as cursor:
            cursor.execute(sql, [case_runs[0].pk, 0])
            assert cursor.fetchone() == (CaseStatus.QUEUED,)
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_prepared_statements WHERE statement LIKE %s", ["SELECT status FROM runs_caserun WHERE id = $1%"]
        )
        assert cursor.fetchone() == (1,)


def test_a_precompiled_get_builds_the_objects_the_queryset_builds(fast, case_runs, django_assert_num_queries):
    claimed = PrecompiledGet(_claim_queryset)
    for case_run in case_runs:
        expected = _claim_queryset().get(pk=case_run.pk)
        with django_assert_num_queries(1):
            got = claimed.get(case_run.pk)
        assert got is not None
        with django_assert_num_queries(0):  # the related rows came with it, as select_related does
            assert _loaded(got) == _loaded(expected)
    assert claimed.get(-1) is None and claimed.get(case_runs[-1].pk + 1000) is None


def _claim_values(now: dt.datetime) -> dict[str, Any]:
    return {"status": CaseStatus.RUNNING, "claimed_at": now, "heartbeat_at": now, "started_at": now}


def test_a_get_after_an_update_reads_the_row_as_written_and_only_if_it_changed(fast, case_runs, django_assert_num_queries):
    now = timezone.now()
    claimed, update = PrecompiledGet(_claim_queryset), RowUpdate(CaseRun)
    one, two = case_runs[0], case_runs[1]
    cas = update.statement(one.pk, where={"status": CaseStatus.QUEUED}, values=_claim_values(now), increment=("attempt",))
    one_statement = fast and connection.vendor == "postgresql"  # the write and the read in one CTE
    with django_assert_num_queries(1 if one_statement else 2):
        got = claimed.get(one.pk, updated=cas)
    # The same claim through the public API on the other row: filter(...).update(...), then get().
    assert CaseRun.objects.filter(pk=two.pk, status=CaseStatus.QUEUED).update(**_claim_values(now), attempt=F("attempt") + 1) == 1
    expected = _claim_queryset().get(pk=two.pk)
    assert isinstance(got, CaseRun) and (got.status, got.attempt, got.claimed_at) == (CaseStatus.RUNNING, 1, now)
    assert _fields(got, without=_OWN) == _fields(expected, without=_OWN)
    assert _fields(got) == _fields(_claim_queryset().get(pk=one.pk))  # what it read is what is stored
    # Claimed already: the compare-and-set changes nothing, so nothing is read and the row stays.
    again = update.statement(one.pk, where={"status": CaseStatus.QUEUED}, values=_claim_values(timezone.now()), increment=("attempt",))
    assert claimed.get(one.pk, updated=again) is None
    assert _fields(CaseRun.objects.get(pk=one.pk)) == _fields(got)


def _finish_values(now: dt.datetime) -> dict[str, Any]:
    # Every kind of column the finish writes: text, null, JSON, integers, a bool, a float, a time.
    return {
        "status": CaseStatus.COMPLETED,
        "finished_at": now,
        "stop_reason": "submitted",
        "final_output": "note ✓ 41",
        "error": "",
        "step_count": 3,
        "tool_call_count": 2,
        "input_tokens": 2**40,
        "output_tokens": 7,
        "total_tokens": 2**40 + 7,
        "duration_ms": 1234,
        "verification": {"files": [{"path": "/workspace/a.txt", "bytes": 3}], "ok": True, "note": "ünïcode"},
        "provider_failure": None,
        "passed": True,
        "score": 0.75,
    }


def test_a_row_update_writes_what_queryset_update_writes(fast, case_runs):
    now = timezone.now()
    update = RowUpdate(CaseRun)
    one, two = case_runs[0], case_runs[1]
    for case_run in (one, two):
        CaseRun.objects.filter(pk=case_run.pk).update(status=CaseStatus.RUNNING, attempt=2)
    where = {"status": CaseStatus.RUNNING, "attempt": 2}
    assert update(one.pk, where=where, values=_finish_values(now), increment=("attempt",)) == 1
    assert CaseRun.objects.filter(pk=two.pk, **where).update(**_finish_values(now), attempt=F("attempt") + 1) == 1
    written, expected = CaseRun.objects.get(pk=one.pk), CaseRun.objects.get(pk=two.pk)
    assert _fields(written, without=_OWN) == _fields(expected, without=_OWN)
    assert (written.attempt, written.verification["note"], written.input_tokens) == (3, "ünïcode", 2**40)
    # A compare-and-set that no longer holds changes nothing, as filter(...).update(...) does.
    assert update(one.pk, where=where, values={"status": CaseStatus.FAILED}) == 0
    assert CaseRun.objects.filter(pk=two.pk, **where).update(status=CaseStatus.FAILED) == 0
    assert _fields(CaseRun.objects.get(pk=one.pk)) == _fields(written)


def _score(case_run: CaseRun, passed: bool, overall: float, document: dict[str, Any]) -> CaseScore:
    return CaseScore(case_run=case_run, lane=case_run.lane, passed=passed, overall_score=overall, validity="valid", document=document)


def test_a_row_upsert_writes_what_bulk_create_writes(fast, case_runs):
    upsert = RowUpsert(CaseScore, unique="case_run", update=("lane", "passed", "overall_score", "validity", "document"))
    one, two = case_runs[0], case_runs[1]
    fields = ["lane", "passed", "overall_score", "validity", "document"]
    for passed, overall, document in [
        (False, 0.0, {"passed": False, "why": ["a", "b"]}),
        (True, 1.0, {"passed": True, "n": 1.5, "s": "ü"}),
    ]:
        upsert(_score(one, passed, overall, document))
        CaseScore.objects.bulk_create(
            [_score(two, passed, overall, document)], update_conflicts=True, unique_fields=["case_run"], update_fields=fields
        )
        written, expected = CaseScore.objects.get(case_run=one), CaseScore.objects.get(case_run=two)
        assert _fields(written, without=("id", "case_run_id", "created_at")) == _fields(
            expected, without=("id", "case_run_id", "created_at")
        )
        assert (written.passed, written.document) == (passed, document)
    assert CaseScore.objects.filter(case_run__in=[one, two]).count() == 2  # updated in place, never a second row
    assert written.created_at is not None and expected.created_at is not None  # auto_now_add, kept by the update

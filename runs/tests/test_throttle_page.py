"""The live run page says when a lane's cases wait on their provider account's limit."""

from __future__ import annotations

import itertools

import pytest

from engine.events import PROVIDER_CALL_RETRYING, PROVIDER_THROTTLE_WAITING, PROVIDER_THROTTLED, iso_now
from engine.types import Event
from runs.events import run_events_append
from runs.models import CaseRun, CaseStatus, RunEvent
from runs.presenters import event_summary
from runs.tests.test_live import htmx, started_run, url

pytestmark = pytest.mark.django_db

_ids = itertools.count(1)
WAITING = {"provider_key": "scripted", "provider_account_id": 1, "limit": "max_concurrent_calls", "limit_value": 1, "retry_in_ms": 100}


def emit(case: CaseRun, event_type: str, payload: dict, *, attempt: int = 1) -> None:
    event = Event(event_id=f"t:{next(_ids)}", event_type=event_type, source="worker", occurred_at=iso_now(), payload=payload)
    run_events_append(run_id=case.run_id, lane_id=case.lane_id, case_run_id=case.pk, attempt=attempt, events=[event])


@pytest.fixture
def running_case(workspace, admin, tasks):
    run = started_run(workspace, admin, tasks, lanes=1)
    case = CaseRun.objects.filter(run=run).order_by("position").first()
    CaseRun.objects.filter(pk=case.pk).update(status=CaseStatus.RUNNING, attempt=1)
    case.refresh_from_db()
    return case


def status_partial(client, case: CaseRun) -> str:
    response = htmx(client, url("detail", case.run_id, partial="run-status"))
    assert response.status_code == 200
    return response.content.decode()


@pytest.mark.parametrize("persona", ["admin", "viewer"])
def test_a_lane_waiting_on_its_provider_limit_says_so(running_case, client_for, persona, request):
    emit(running_case, PROVIDER_THROTTLE_WAITING, WAITING)
    page = status_partial(client_for(request.getfixturevalue(persona)), running_case)
    assert "Waiting on provider limit" in page and 'data-provider-waiting="1"' in page
    assert "waiting on provider limit (1 concurrent calls)" in page  # the lane's current activity


def test_the_notice_goes_once_the_call_got_its_slot(running_case, client_for, admin):
    emit(running_case, PROVIDER_THROTTLE_WAITING, WAITING)
    emit(running_case, PROVIDER_THROTTLED, {**WAITING, "waited_ms": 1200, "acquired": True})
    page = status_partial(client_for(admin), running_case)
    assert "Waiting on provider limit" not in page and "data-provider-waiting" not in page


def test_a_wait_of_an_earlier_attempt_does_not_count(running_case, client_for, admin):
    emit(running_case, PROVIDER_THROTTLE_WAITING, WAITING)  # attempt 1 died while waiting
    CaseRun.objects.filter(pk=running_case.pk).update(attempt=2)
    page = status_partial(client_for(admin), running_case)
    assert "data-provider-waiting" not in page


def test_a_stranger_cannot_see_the_run(running_case, client_for, stranger):
    emit(running_case, PROVIDER_THROTTLE_WAITING, WAITING)
    assert client_for(stranger).get(url("detail", running_case.run_id)).status_code == 404


def test_the_ticker_words_throttle_and_retry_events(running_case):
    emit(running_case, PROVIDER_THROTTLED, {**WAITING, "waited_ms": 1500, "acquired": True})
    emit(
        running_case,
        PROVIDER_THROTTLED,
        {**WAITING, "limit": "tokens_per_minute", "limit_value": 9000, "waited_ms": 60000, "acquired": False},
    )
    emit(running_case, PROVIDER_CALL_RETRYING, {"code": "rate_limit", "attempt": 1, "delay_ms": 2400, "retry_after_ms": 1000})
    lines = [event_summary(e) for e in RunEvent.objects.filter(case_run=running_case).order_by("sequence_number")]
    assert lines == [
        "waited 1.5 s on provider limit (1 concurrent calls)",
        "gave up after 60.0 s on provider limit (9000 tokens/min)",
        "provider rate_limit: retrying in 2.4 s",
    ]

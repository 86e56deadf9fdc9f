"""The hosted-agent callback over real HTTP (runs/hosted/views.py): 201/401/400/409/410/413."""

from __future__ import annotations

import json
import time

import pytest

from engine.events import SYSTEM_OUTPUT_FINALIZED, SYSTEM_RUN_COMPLETED, SYSTEM_RUN_STARTED, TOOL_CALL_STARTED
from runs import services
from runs.models import CaseRun, CaseStatus, Run, RunEvent, RunStatus
from runs.pipeline.hosted.tokens import TokenScope, token_issue
from runs.tests.factories import native_pack_yaml, publish
from runs.tests.hosted_helpers import claim, hosted_deployment

pytestmark = pytest.mark.django_db


@pytest.fixture
def hosted_run(workspace, admin, tasks):
    version = publish(workspace, admin, native_pack_yaml(cases=2))
    deployment = hosted_deployment(workspace)
    return services.run_create(workspace=workspace, user=admin, pack_version=version, deployment_ids=[deployment.pk])


@pytest.fixture
def case_run(hosted_run):
    return claim(CaseRun.objects.filter(run=hosted_run).order_by("position").first())


def token_for(case_run: CaseRun, *, attempt: int | None = None, expires_in: int = 60) -> str:
    scope = TokenScope(
        run_id=case_run.run_id,
        lane_id=case_run.lane_id,
        case_run_id=case_run.pk,
        attempt=attempt or case_run.attempt,
        expires_at=int(time.time()) + expires_in,
    )
    return token_issue(scope)


def post(client, case_run_id: int, message: dict | bytes | str, token: str | None):
    body = message if isinstance(message, bytes | str) else json.dumps(message)
    headers = {"HTTP_AUTHORIZATION": f"Bearer {token}"} if token else {}
    return client.post(f"/hooks/hosted/{case_run_id}/events", data=body, content_type="application/json", **headers)


def msg(event_id: str, kind: str, payload: dict | None = None) -> dict:
    return {"event_id": event_id, "type": kind, "payload": payload or {}}


def test_it_records_a_whole_conversation_as_canonical_events(client, case_run):
    token = token_for(case_run)
    for message in (
        msg("s", "run_started", {"agent_name": "team"}),
        msg("t1", "tool.call.started", {"tool_name": "lookup", "arguments": {"q": 1}}),
        msg("a", "final_answer", {"output": "note number 0"}),
        msg("f", "run_finished"),
    ):
        response = post(client, case_run.pk, message, token)
        assert response.status_code == 201, response.content
    events = list(RunEvent.objects.filter(case_run=case_run).order_by("sequence_number").values_list("event_type", "source", "payload"))
    assert [e[0] for e in events] == [SYSTEM_RUN_STARTED, TOOL_CALL_STARTED, SYSTEM_OUTPUT_FINALIZED, SYSTEM_RUN_COMPLETED]
    assert {e[1] for e in events} == {"hosted_agent"}
    assert events[2][2]["final_output"] == "note number 0"
    assert events[3][2]["final_output"] == "note number 0"  # the completion carries the answer, as native runs do
    assert RunEvent.objects.filter(case_run=case_run, event_id=f"hosted:{case_run.pk}:1:a").exists()


def test_it_refuses_a_missing_forged_or_expired_token(client, case_run):
    assert post(client, case_run.pk, msg("s", "run_started"), None).status_code == 401
    assert post(client, case_run.pk, msg("s", "run_started"), "nonsense.token").status_code == 401
    expired = post(client, case_run.pk, msg("s", "run_started"), token_for(case_run, expires_in=-1))
    assert expired.status_code == 401
    assert expired.json()["error"]["code"] == "invalid_token"
    assert not RunEvent.objects.filter(case_run=case_run).exists()


def test_one_cases_token_cannot_write_to_another_case(client, case_run, hosted_run):
    other = claim(CaseRun.objects.filter(run=hosted_run).exclude(pk=case_run.pk).get())
    token = token_for(case_run)
    assert post(client, other.pk, msg("s", "run_started"), token).status_code == 401
    # A genuine token whose case id is right but whose run and lane are another's is refused too.
    scope = TokenScope(
        run_id=other.run_id + 100, lane_id=other.lane_id + 100, case_run_id=other.pk, attempt=1, expires_at=int(time.time()) + 60
    )
    assert post(client, other.pk, msg("s", "run_started"), token_issue(scope)).status_code == 401
    assert not RunEvent.objects.filter(case_run=other).exists()


def test_a_token_of_an_earlier_attempt_is_gone(client, case_run):
    stale = token_for(case_run)
    claim(case_run, attempt=2)
    response = post(client, case_run.pk, msg("s", "run_started"), stale)
    assert response.status_code == 410
    assert not RunEvent.objects.filter(case_run=case_run).exists()


@pytest.mark.parametrize(
    ("message", "field"),
    [
        (msg("x", "tool.call.exploded"), "type"),
        ({"type": "run_started", "payload": {}}, "event_id"),
        (msg("bad id with spaces", "run_started"), "event_id"),
        (msg("a", "final_answer", {}), "payload.output"),
        (msg("a", "final_answer", {"output": 42}), "payload.output"),
        (msg("t", "tool.call.started", {"tool_name": "x", "secret": 1}), "payload.secret"),
        ({**msg("s", "run_started"), "extra": 1}, "extra"),
    ],
)
def test_it_names_the_field_of_a_bad_message(client, case_run, message, field):
    response = post(client, case_run.pk, message, token_for(case_run))
    assert response.status_code == 400, response.content
    assert field in response.json()["error"]["fields"]
    assert not RunEvent.objects.filter(case_run=case_run).exists()


def test_it_refuses_bad_json_with_a_400(client, case_run):
    for body in ("{not json", "[1, 2]", b"\xff\xfe"):
        assert post(client, case_run.pk, body, token_for(case_run)).status_code == 400


def test_a_replayed_event_id_is_a_409_and_stored_once(client, case_run):
    token = token_for(case_run)
    assert post(client, case_run.pk, msg("s", "run_started"), token).status_code == 201
    replay = post(client, case_run.pk, msg("s", "run_started"), token)
    assert replay.status_code == 409
    assert replay.json()["error"]["code"] == "duplicate_event"
    assert RunEvent.objects.filter(case_run=case_run).count() == 1


def test_the_final_answer_is_set_exactly_once(client, case_run):
    token = token_for(case_run)
    assert post(client, case_run.pk, msg("a1", "final_answer", {"output": "first"}), token).status_code == 201
    second = post(client, case_run.pk, msg("a2", "final_answer", {"output": "second"}), token)
    assert second.status_code == 409
    assert second.json()["error"]["code"] == "final_answer_recorded"
    answers = RunEvent.objects.filter(case_run=case_run, event_type=SYSTEM_OUTPUT_FINALIZED)
    assert [e.payload["final_output"] for e in answers] == ["first"]


def test_a_finished_case_takes_no_more_events(client, case_run):
    token = token_for(case_run)
    assert post(client, case_run.pk, msg("f", "run_finished"), token).status_code == 201
    late = post(client, case_run.pk, msg("late", "final_answer", {"output": "too late"}), token)
    assert late.status_code == 410
    assert late.json()["error"]["code"] == "case_finished"
    CaseRun.objects.filter(pk=case_run.pk).update(status=CaseStatus.COMPLETED)
    assert post(client, case_run.pk, msg("later", "run_started"), token).status_code == 410


def test_a_cancelled_run_takes_no_more_events(client, case_run):
    Run.objects.filter(pk=case_run.run_id).update(status=RunStatus.CANCELLED)
    assert post(client, case_run.pk, msg("s", "run_started"), token_for(case_run)).status_code == 410


def test_an_oversized_body_is_a_413(client, case_run, settings):
    settings.HOSTED_CALLBACK_MAX_BYTES = 1000
    big = msg("a", "final_answer", {"output": "x" * 2000})
    response = post(client, case_run.pk, big, token_for(case_run))
    assert response.status_code == 413
    assert not RunEvent.objects.filter(case_run=case_run).exists()


def test_only_post_is_allowed_and_no_csrf_token_is_needed(case_run):
    from django.test import Client

    strict = Client(enforce_csrf_checks=True)
    assert strict.get(f"/hooks/hosted/{case_run.pk}/events").status_code == 405
    assert post(strict, case_run.pk, msg("s", "run_started"), token_for(case_run)).status_code == 201


@pytest.mark.parametrize(
    "body",
    [
        '{"event_id": "d", "type": "tool.call.started", "payload": {"tool_name": "x", "arguments": {"a": '
        + "[" * 5000
        + "]" * 5000
        + "}}}",
        '{"event_id": "n", "type": "final_answer", "payload": {"output": "a\\u0000b"}}',
        '{"event_id": "f", "type": "model.call.completed", "payload": {"provider_model_id": "m", "usage": {"input_tokens": NaN}}}',
    ],
    ids=["deep", "nul", "nan"],
)
def test_it_refuses_json_no_database_could_store_with_a_400(client, case_run, body):
    response = post(client, case_run.pk, body, token_for(case_run))
    assert response.status_code == 400, response.content
    assert not RunEvent.objects.filter(case_run=case_run).exists()


def test_an_agent_cannot_write_without_bound(client, case_run, monkeypatch):
    monkeypatch.setattr("runs.pipeline.hosted.callback.MAX_EVENTS_PER_CASE", 3)
    token = token_for(case_run)
    for n in range(3):
        assert post(client, case_run.pk, msg(f"t{n}", "tool.call.started", {"tool_name": "x"}), token).status_code == 201
    refused = post(client, case_run.pk, msg("t9", "tool.call.started", {"tool_name": "x"}), token)
    assert refused.status_code == 429 and refused.json()["error"]["code"] == "too_many_events"
    assert RunEvent.objects.filter(case_run=case_run).count() == 3


def _big(event_id: str, size: int) -> dict:
    return msg(event_id, "tool.call.started", {"tool_name": "x", "arguments": {"blob": "a" * size}})


@pytest.mark.parametrize(
    ("setting", "scope_name"),
    [
        ("HOSTED_EVENT_BYTES_PER_CASE", "case attempt"),
        ("HOSTED_EVENT_BYTES_PER_RUN", "run"),
        ("HOSTED_EVENT_BYTES_PER_WORKSPACE", "workspace"),
    ],
)
def test_byte_budgets_per_case_run_and_workspace_refuse_a_flood_with_a_429_naming_them(client, hosted_run, settings, setting, scope_name):
    # issue 23: 2,000 events × 256 KiB were accepted per case attempt, no run or workspace bound.
    setattr(settings, setting, 30_000)
    first, second = (claim(c) for c in CaseRun.objects.filter(run=hosted_run).order_by("position"))
    assert post(client, first.pk, _big("a", 10_000), token_for(first)).status_code == 201
    # the second case counts toward the run and the workspace, not toward the first case
    assert post(client, second.pk, _big("b", 10_000), token_for(second)).status_code == 201
    refused = post(client, first.pk, _big("c", 12_000), token_for(first))
    if scope_name == "case attempt":
        assert refused.status_code == 201  # this case alone has used ~22 kB of its 30 kB
        refused = post(client, first.pk, _big("d", 12_000), token_for(first))
    assert refused.status_code == 413, refused.content  # not 429: retrying cannot succeed
    error = refused.json()["error"]
    assert error["code"] == "quota_exceeded" and f"{scope_name} budget of 30000 bytes" in error["message"]
    assert setting in error["message"]
    first.refresh_from_db()
    assert RunEvent.objects.filter(case_run__run=hosted_run).count() == (3 if scope_name == "case attempt" else 2)
    assert first.hosted_bytes < 30_000


def test_a_new_attempt_starts_with_an_empty_case_budget(client, case_run, settings):
    settings.HOSTED_EVENT_BYTES_PER_CASE = 15_000
    assert post(client, case_run.pk, _big("a", 10_000), token_for(case_run)).status_code == 201
    assert post(client, case_run.pk, _big("b", 10_000), token_for(case_run)).status_code == 413
    CaseRun.objects.filter(pk=case_run.pk).update(attempt=case_run.attempt + 1, hosted_bytes=0)  # what the dispatch of a retry does
    case_run.refresh_from_db()
    assert post(client, case_run.pk, _big("c", 10_000), token_for(case_run)).status_code == 201


def test_the_callback_is_throttled_per_case(client, case_run, hosted_run, settings):
    settings.HOSTED_CALLBACK_THROTTLE = "3/min"
    token = token_for(case_run)
    answers = [post(client, case_run.pk, msg(f"t{n}", "tool.call.started", {"tool_name": "x", "arguments": {}}), token) for n in range(4)]
    assert [a.status_code for a in answers] == [201, 201, 201, 429]
    assert [a["RateLimit-Remaining"] for a in answers] == ["2", "1", "0", "0"]
    assert answers[-1].json()["error"]["code"] == "throttled" and int(answers[-1]["Retry-After"]) >= 1
    assert RunEvent.objects.filter(case_run=case_run).count() == 3
    other = claim(CaseRun.objects.filter(run=hosted_run).exclude(pk=case_run.pk).first())
    assert post(client, other.pk, msg("s", "run_started"), token_for(other)).status_code == 201  # another case's own budget
    assert post(client, case_run.pk, msg("late", "run_started"), "forged").status_code == 401  # no token, no count

"""Handing a case to a hosted agent (runs/pipeline/hosted/dispatch.py, attempt.py): the endpoint is hostile too."""

from __future__ import annotations

import json
import time

import pytest

from engine.events import SYSTEM_RUN_FAILED
from runs import pipeline, services
from runs.models import CaseRun, CaseStatus, Run, RunEvent
from runs.pipeline.hosted.dispatch import DispatchFailed, case_dispatch
from runs.tests.factories import native_pack_yaml, publish
from runs.tests.hosted_helpers import claim, endpoint, hosted_deployment
from secrets_app.services import secret_set

CASE = {"case_key": "c", "token": "t"}


def test_a_loopback_endpoint_is_refused_without_the_operator_setting(settings):
    settings.ALLOW_PRIVATE_PROVIDER_URLS = False
    with endpoint() as (url, received), pytest.raises(DispatchFailed) as caught:
        case_dispatch(url, CASE)
    assert not caught.value.retryable
    assert received == []


def test_it_posts_the_case_as_json_with_no_credential_header(settings):
    settings.ALLOW_PRIVATE_PROVIDER_URLS = True
    with endpoint() as (url, received):
        assert case_dispatch(url, CASE) == 202
    assert received[0]["body"] == CASE
    assert "Authorization" not in received[0]["headers"]


def test_it_never_follows_a_redirect(settings):
    settings.ALLOW_PRIVATE_PROVIDER_URLS = True
    with endpoint() as (elsewhere, second):
        with endpoint(307, headers={"Location": elsewhere}) as (url, first), pytest.raises(DispatchFailed) as caught:
            case_dispatch(url, CASE)
    assert not caught.value.retryable
    assert len(first) == 1 and second == []


@pytest.mark.parametrize(("status", "retryable"), [(500, True), (503, True), (400, False), (404, False)])
def test_an_error_answer_fails_the_dispatch(settings, status, retryable):
    settings.ALLOW_PRIVATE_PROVIDER_URLS = True
    with endpoint(status) as (url, _), pytest.raises(DispatchFailed) as caught:
        case_dispatch(url, CASE)
    assert caught.value.retryable is retryable
    assert str(status) in str(caught.value)


def test_an_oversized_answer_is_cut_off(settings):
    settings.ALLOW_PRIVATE_PROVIDER_URLS = True
    settings.HOSTED_DISPATCH_MAX_RESPONSE_BYTES = 100
    with endpoint(200, body=b"x" * 5000) as (url, _), pytest.raises(DispatchFailed, match="size limit"):
        case_dispatch(url, CASE)


@pytest.mark.django_db(transaction=True)
def test_a_silent_agent_fails_at_its_deadline_and_its_token_is_void_afterwards(settings, workspace, admin, tasks, client):
    settings.ALLOW_PRIVATE_PROVIDER_URLS = True
    version = publish(workspace, admin, native_pack_yaml(cases=1))
    with endpoint() as (url, received):
        deployment = hosted_deployment(workspace, endpoint_url=url)
        deployment.runtime_profile.run_timeout_seconds = 1
        deployment.runtime_profile.save(update_fields=["run_timeout_seconds"])
        run = services.run_create(workspace=workspace, user=admin, pack_version=version, deployment_ids=[deployment.pk])
        case_run = CaseRun.objects.get(run=run)
        claim(case_run, attempt=0)  # the worker's claim makes it attempt 1
        CaseRun.objects.filter(pk=case_run.pk).update(status=CaseStatus.QUEUED)
        assert pipeline.case_run_execute(case_run_id=case_run.pk) == "dispatched"  # no process waits for the agent
    case_run.refresh_from_db()
    assert case_run.status == CaseStatus.RUNNING and case_run.heartbeat_at > case_run.claimed_at  # the reaper waits for the deadline
    assert [name for name in tasks.names() if name == "runs.case_run_deadline"] == ["runs.case_run_deadline"]
    time.sleep(1.2)  # past its 1 s deadline: the deadline job closes the case
    tasks.drain()
    case_run.refresh_from_db()
    assert case_run.status == CaseStatus.FAILED and case_run.stop_reason == "deadline_exceeded"
    assert "deadline" in case_run.error
    sent = received[0]["body"]
    assert sent["case_key"] == "case-0" and sent["instructions"] == "Read notes.txt and submit its content."
    assert sent["inputs"] == [{"key": "number", "kind": "text", "value": "0"}]
    assert "expectations" not in json.dumps(sent)  # the answer key never leaves
    assert any(f["path"].endswith("notes.txt") for f in sent["workspace_files"])
    assert sent["callback_url"].endswith(f"/hooks/hosted/{case_run.pk}/events")
    assert RunEvent.objects.filter(case_run=case_run, event_type=SYSTEM_RUN_FAILED).count() == 1
    late = client.post(
        sent["callback_url"].split("localhost:8000", 1)[-1],
        data=json.dumps({"event_id": "late", "type": "final_answer", "payload": {"output": "x"}}),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {sent['token']}",
    )
    assert late.status_code in (401, 410)  # finished (or, past its deadline, expired)


@pytest.mark.django_db(transaction=True)
def test_cancelling_the_run_closes_a_hosted_case_at_once_and_voids_the_token(settings, workspace, admin, tasks):
    settings.ALLOW_PRIVATE_PROVIDER_URLS = True
    version = publish(workspace, admin, native_pack_yaml(cases=1))
    with endpoint() as (url, received):
        deployment = hosted_deployment(workspace, endpoint_url=url)
        run = services.run_create(workspace=workspace, user=admin, pack_version=version, deployment_ids=[deployment.pk])
        case_run = CaseRun.objects.get(run=run)
        claim(case_run, attempt=0)
        CaseRun.objects.filter(pk=case_run.pk).update(status=CaseStatus.QUEUED)
        assert pipeline.case_run_execute(case_run_id=case_run.pk) == "dispatched"
    services.run_cancel(run=Run.objects.get(pk=run.pk), user=admin)
    case_run.refresh_from_db()
    assert case_run.status == CaseStatus.CANCELLED and case_run.stop_reason == "cancelled"
    assert RunEvent.objects.get(case_run=case_run, event_type=SYSTEM_RUN_FAILED).payload["stop_reason"] == "cancelled"
    assert len(received) == 1
    tasks.drain()  # the deadline job finds the case finished
    assert CaseRun.objects.get(pk=case_run.pk).status == CaseStatus.CANCELLED


@pytest.mark.django_db
def test_an_endpoint_error_is_retried_with_a_new_attempt(settings, workspace, admin, tasks):
    settings.ALLOW_PRIVATE_PROVIDER_URLS = True
    version = publish(workspace, admin, native_pack_yaml(cases=1))
    with endpoint(503) as (url, received):
        deployment = hosted_deployment(workspace, endpoint_url=url)
        run = services.run_create(workspace=workspace, user=admin, pack_version=version, deployment_ids=[deployment.pk])
        case_run = CaseRun.objects.get(run=run)
        claim(case_run, attempt=0)
        CaseRun.objects.filter(pk=case_run.pk).update(status=CaseStatus.QUEUED)
        assert pipeline.case_run_execute(case_run_id=case_run.pk) == "retrying"
    assert "503" in CaseRun.objects.get(pk=case_run.pk).error
    assert len(received) == 1


@pytest.mark.django_db
def test_hosted_agents_are_refused_in_multi_turn_packs(workspace, admin, tasks):
    version = publish(workspace, admin, native_pack_yaml(cases=1))
    version.execution_mode = "multi_turn"  # what the run reads; a real multi-turn pack needs simulator phases
    deployment = hosted_deployment(workspace)
    with pytest.raises(services.RunCreateError) as caught:
        services.run_create(workspace=workspace, user=admin, pack_version=version, deployment_ids=[deployment.pk])
    assert caught.value.field == "deployment_ids" and "multi_turn" in caught.value.message


@pytest.mark.django_db(transaction=True)
def test_the_case_sent_to_a_hosted_agent_masks_workspace_secrets_like_native_events(settings, workspace, admin, tasks):
    # issue 23: canaries were masked in the POSTed case, workspace secret values were not.
    settings.ALLOW_PRIVATE_PROVIDER_URLS = True
    secret_set(workspace=workspace, key="NOTES_KEY", value="notes.txt", actor=admin)  # a value the instructions hold
    secret_set(workspace=workspace, key="NUMBER_KEY", value="number", actor=admin)  # and one an input's key holds
    version = publish(workspace, admin, native_pack_yaml(cases=1))
    with endpoint() as (url, received):
        deployment = hosted_deployment(workspace, endpoint_url=url)
        run = services.run_create(workspace=workspace, user=admin, pack_version=version, deployment_ids=[deployment.pk])
        case_run = CaseRun.objects.get(run=run)
        claim(case_run, attempt=0)
        CaseRun.objects.filter(pk=case_run.pk).update(status=CaseStatus.QUEUED)
        assert pipeline.case_run_execute(case_run_id=case_run.pk) == "dispatched"
    sent = received[0]["body"]
    assert "notes.txt" not in sent["instructions"] and sent["instructions"].startswith("Read ")
    assert "number" not in json.dumps(sent["inputs"])


@pytest.mark.django_db(transaction=True)
def test_each_trial_goes_to_a_hosted_agent_as_its_own_case_with_its_trial_index(settings, workspace, admin, tasks):
    settings.ALLOW_PRIVATE_PROVIDER_URLS = True
    version = publish(workspace, admin, native_pack_yaml(cases=1))
    with endpoint() as (url, received):
        deployment = hosted_deployment(workspace, endpoint_url=url)
        run = services.run_create(workspace=workspace, user=admin, pack_version=version, deployment_ids=[deployment.pk], repeats=2)
        for case_run in CaseRun.objects.filter(run=run).order_by("trial"):
            claim(case_run, attempt=0)
            CaseRun.objects.filter(pk=case_run.pk).update(status=CaseStatus.QUEUED)
            assert pipeline.case_run_execute(case_run_id=case_run.pk) == "dispatched"
        services.run_cancel(run=Run.objects.get(pk=run.pk), user=admin)
    sent = [item["body"] for item in received]
    first, second = CaseRun.objects.filter(run=run).order_by("trial")
    assert [(body["case_key"], body["trial"], body["attempt"]) for body in sent] == [("case-0", 1, 1), ("case-0", 2, 1)]
    assert sent[0]["callback_url"].endswith(f"/hooks/hosted/{first.pk}/events")
    assert sent[1]["callback_url"].endswith(f"/hooks/hosted/{second.pk}/events")
    assert sent[0]["token"] != sent[1]["token"]

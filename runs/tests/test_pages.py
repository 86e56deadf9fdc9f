from __future__ import annotations

import re

import pytest
from django.urls import reverse
from django.utils.html import escape

from engine.events import SYSTEM_RUN_COMPLETED, SYSTEM_RUN_FAILED
from runs import services
from runs.models import CaseRun, RunEvent, RunStatus
from runs.tests.factories import make_deployment, native_pack_yaml, publish


@pytest.fixture
def finished_run(workspace, admin, pack_version, deployment, tasks):
    run = services.run_create(workspace=workspace, user=admin, pack_version=pack_version, deployment_ids=[deployment.pk])
    tasks.drain()
    run.refresh_from_db()
    return run


def url(name, *args):
    return reverse(f"runs:{name}", args=["acme", *args])


@pytest.mark.django_db
@pytest.mark.parametrize("persona, expected", [("admin", 200), ("viewer", 200), ("stranger", 404)])
def test_run_pages_answer_members_and_hide_from_strangers(request, finished_run, client_for, persona, expected):
    client = client_for(request.getfixturevalue(persona))
    case = CaseRun.objects.filter(run=finished_run).first()
    for target in (url("list"), url("detail", finished_run.pk), url("case_replay", finished_run.pk, case.pk)):
        assert client.get(target).status_code == expected, target


@pytest.mark.django_db
@pytest.mark.parametrize("persona, expected", [("member", 200), ("viewer", 403), ("stranger", 404)])
def test_new_run_page_needs_the_member_role(request, pack_version, deployment, client_for, persona, expected):
    client = client_for(request.getfixturevalue(persona))
    assert client.get(url("create")).status_code == expected


@pytest.mark.django_db
def test_it_starts_a_run_from_the_new_run_page(workspace, member, pack_version, deployment, client_for, tasks):
    client = client_for(member)
    input_set = pack_version.input_sets.get()
    response = client.post(
        url("create"),
        {"pack_version_id": pack_version.pk, "input_set_id": input_set.pk, "deployment_ids": [deployment.pk], "name": "From the page"},
    )
    run = workspace.runs.get()
    assert response.status_code == 302 and response["Location"] == url("detail", run.pk)
    assert run.name == "From the page" and run.status == RunStatus.QUEUED
    assert tasks.names() == ["runs.run_start"]


@pytest.mark.django_db
def test_the_new_run_form_previews_agents_times_cases(workspace, member, pack_version, deployment, client_for):
    other = make_deployment(workspace, name="second")
    client = client_for(member)
    response = client.get(
        url("create"), {"pack_version_id": pack_version.pk, "deployment_ids": [deployment.pk, other.pk]}, HTTP_HX_REQUEST="true"
    )
    body = response.content.decode()
    assert "2 agents × 3 cases = 6 case runs" in body
    assert "<html" not in body  # only the form partial


def test_one_agent_on_one_case_is_one_case_run(workspace, member, deployment, client_for):
    version = publish(workspace, member, native_pack_yaml(cases=1))
    body = client_for(member).get(url("create"), {"pack_version_id": version.pk, "deployment_ids": [deployment.pk]}, HTTP_HX_REQUEST="true")
    assert re.search(r"1 agent × 1 case = 1 case run(?!s)", body.content.decode())


@pytest.mark.django_db
def test_the_new_run_page_preselects_a_pack_version(pack_version, deployment, member, client_for):
    body = client_for(member).get(url("create") + f"?pack_version={pack_version.pk}").content.decode()
    assert f'value="{pack_version.pk}" selected' in body


@pytest.mark.django_db
def test_the_new_run_page_shows_errors_next_to_fields(member, pack_version, client_for):
    response = client_for(member).post(url("create"), {"pack_version_id": pack_version.pk})
    assert response.status_code == 200
    assert "This field is required." in response.content.decode()


@pytest.mark.django_db
def test_cancelling_a_finished_run_from_its_page_says_why(finished_run, member, client_for):
    response = client_for(member).post(url("cancel", finished_run.pk), follow=True)
    assert response.redirect_chain == [(url("detail", finished_run.pk), 302)]
    assert escape("can't be cancelled: only a queued, provisioning or running run can.") in response.content.decode()
    finished_run.refresh_from_db()
    assert finished_run.status == RunStatus.COMPLETED


@pytest.mark.django_db
def test_live_partials_stop_polling_when_the_run_is_terminal(finished_run, viewer, client_for):
    client = client_for(viewer)
    response = client.get(url("detail", finished_run.pk) + "?partial=run-status", HTTP_HX_REQUEST="true")
    assert response.status_code == 286
    response = client.get(url("detail", finished_run.pk) + "?partial=run-live&after=0", HTTP_HX_REQUEST="true")
    assert response.status_code == 286 and 'hx-trigger="every' not in response.content.decode()  # the last tick renews no poller


@pytest.mark.django_db
def test_the_ticker_fetches_only_events_after_the_last_seen_id(workspace, admin, pack_version, deployment, tasks, client_for):
    run = services.run_create(workspace=workspace, user=admin, pack_version=pack_version, deployment_ids=[deployment.pk])
    tasks.drain()
    last = RunEvent.objects.filter(run=run).order_by("-id").first()
    run.status = RunStatus.RUNNING
    run.save(update_fields=["status"])
    response = client_for(admin).get(url("detail", run.pk) + f"?partial=run-live&after={last.pk}", HTTP_HX_REQUEST="true")
    assert response.status_code == 200
    body = response.content.decode()
    assert f'id="live-cursor" name="after" value="{last.pk}"' in body and "afterbegin:#run-ticker" not in body
    earlier = client_for(admin).get(url("detail", run.pk) + f"?partial=run-live&after={last.pk - 2}", HTTP_HX_REQUEST="true")
    lines = earlier.content.decode().split('hx-swap-oob="afterbegin:#run-ticker">')[1].split("</ol>")[0]
    assert lines.count("<li") == 2 and f"#{last.pk} " in lines


@pytest.mark.django_db
def test_the_run_page_shows_lanes_progress_and_cases(finished_run, viewer, client_for):
    body = client_for(viewer).get(url("detail", finished_run.pk)).content.decode()
    assert "reader" in body and "3 / 3 cases done" in body
    case = CaseRun.objects.get(run=finished_run, case_key="case-0")
    assert "case-0" in body and "data-matrix" in body
    assert f'href="{url("case_replay", finished_run.pk, case.pk)}"' in body  # its matrix cell opens the replay
    assert 'id="run-scorecard"' in body
    assert "Cancel run" not in body  # viewer, and the run is finished


@pytest.mark.django_db
def test_the_replay_shows_tool_calls_and_the_final_output(finished_run, viewer, client_for):
    case = CaseRun.objects.filter(run=finished_run).order_by("position").first()
    body = client_for(viewer).get(url("case_replay", finished_run.pk, case.pk) + "?view=events").content.decode()
    assert "Tool read_file" in body and "Final output" in body and "note number 0" in body
    event = RunEvent.objects.filter(case_run=case, event_type=SYSTEM_RUN_COMPLETED).get()
    assert f'id="event-{event.event_id}"' in body
    assert "Raw event JSON" in body


@pytest.mark.django_db
def test_the_replay_of_another_runs_case_is_404(workspace, admin, finished_run, deployment, client_for, tasks):
    other_version = publish(workspace, admin, native_pack_yaml(cases=1))
    other = services.run_create(workspace=workspace, user=admin, pack_version=other_version, deployment_ids=[deployment.pk])
    foreign_case = CaseRun.objects.filter(run=other).first()
    assert client_for(admin).get(url("case_replay", finished_run.pk, foreign_case.pk)).status_code == 404


@pytest.mark.django_db
def test_run_list_filters_by_status_and_pack(finished_run, viewer, client_for):
    client = client_for(viewer)
    assert finished_run.name in client.get(url("list") + "?status=completed").content.decode()
    assert finished_run.name not in client.get(url("list") + "?status=failed").content.decode()
    assert finished_run.name not in client.get(url("list") + "?pack=999999").content.decode()


@pytest.mark.django_db
def test_run_list_has_a_fixed_number_of_queries(workspace, admin, deployment, client_for, tasks, django_assert_max_num_queries):
    version = publish(workspace, admin, native_pack_yaml(cases=2))
    client = client_for(admin)
    client.get(url("list"))
    for _ in range(2):
        services.run_create(workspace=workspace, user=admin, pack_version=version, deployment_ids=[deployment.pk])
    with django_assert_max_num_queries(14) as few:
        client.get(url("list"))
    for _ in range(5):
        services.run_create(workspace=workspace, user=admin, pack_version=version, deployment_ids=[deployment.pk])
    with django_assert_max_num_queries(len(few.captured_queries)):
        client.get(url("list"))


@pytest.mark.django_db
def test_the_ticker_says_what_each_event_was(finished_run, viewer, client_for):
    body = client_for(viewer).get(url("detail", finished_run.pk)).content.decode()
    assert "read_file ok" in body and "completed in 2 steps" in body
    assert "ev-failed" not in body


@pytest.mark.django_db
def test_a_failed_case_stands_out_in_the_ticker_and_opens_in_the_replay(workspace, admin, pack_version, client_for, tasks):
    deployment = make_deployment(workspace, credential_reference="workspace-secret://MISSING")
    run = services.run_create(workspace=workspace, user=admin, pack_version=pack_version, deployment_ids=[deployment.pk])
    tasks.drain()
    client = client_for(admin)
    body = client.get(url("detail", run.pk)).content.decode()
    assert '<li class="ev-failed">' in body and escape('failed: provider_error workspace secret "MISSING" not found') in body
    case = CaseRun.objects.filter(run=run).order_by("position").first()
    replay = client.get(url("case_replay", run.pk, case.pk) + "?view=events").content.decode()
    assert '<details class="step is-error"' in replay and "Failed: provider_error" in replay
    event = RunEvent.objects.get(case_run=case, event_type=SYSTEM_RUN_FAILED)
    assert f'id="event-{event.event_id}" open>' in replay

"""The live run page and the replay as an investigation tool (issue 11), through the test client.

Cancel ends lanes and the scorecard; lanes are dispatched interleaved; the results matrix with
its filters; partials that answer 204 when nothing changed and 286 when the run is over; the
replay's times, tokens, cost, model inputs, neighbours, live tail and side-by-side view.
"""

from __future__ import annotations

import datetime as dt

import pytest
from django.urls import reverse
from django.utils import timezone

from engine.events import MODEL_CALL_STARTED
from engine.redact import Redactor
from engine.types import Event, JSONObject
from runs import services
from runs.events import run_events_append
from runs.models import CaseRun, CaseStatus, LaneStatus, LaneStatusHistory, Run, RunEvent, RunStatus, ScoreStatus
from runs.tests.factories import READ_AND_SUBMIT, make_deployment, native_pack_yaml, publish
from runs.tests.fixtures import TASKS

pytestmark = pytest.mark.django_db

WRONG_ON_CASE_1 = {"default": READ_AND_SUBMIT, "cases": {"case-1": [{"submit": "no idea"}]}}


def url(name, *args, **query):
    base = reverse(f"runs:{name}", args=["acme", *args])
    return base + ("?" + "&".join(f"{k}={v}" for k, v in query.items()) if query else "")


def htmx(client, target, **extra):
    return client.get(target, HTTP_HX_REQUEST="true", **extra)


@pytest.fixture
def race(workspace, admin, pack_version, tasks):
    """A finished run: lane "right" passes every case, lane "wrong" fails case-1."""
    right = make_deployment(workspace, name="right")
    wrong = make_deployment(workspace, name="wrong", script=WRONG_ON_CASE_1)
    run = services.run_create(workspace=workspace, user=admin, pack_version=pack_version, deployment_ids=[right.pk, wrong.pk])
    tasks.drain()
    run.refresh_from_db()
    assert run.status == RunStatus.COMPLETED
    return run


def started_run(workspace, admin, tasks, *, cases=3, lanes=2, in_flight=8):
    version = publish(workspace, admin, native_pack_yaml(cases=cases))
    deployments = [make_deployment(workspace, name=f"lane-{i}", max_in_flight_cases=in_flight) for i in range(lanes)]
    run = services.run_create(workspace=workspace, user=admin, pack_version=version, deployment_ids=[d.pk for d in deployments])
    executes = []  # started, nothing executed yet: the case tasks wait in the queue, in the order sent
    while tasks.items:
        name, args, options = tasks.items.pop(0)
        if name == "runs.case_run_execute":
            executes.append((name, args, options))
        else:
            TASKS[name](*args)
    tasks.items.extend(executes)
    run.refresh_from_db()
    return run


# -- cancel reaches a terminal state everywhere ----------------------------------------------------


def test_cancel_ends_every_lane_and_the_run_scorecard_is_not_pending_for_ever(workspace, admin, tasks, client_for):
    run = started_run(workspace, admin, tasks)
    assert set(run.lanes.values_list("status", flat=True)) == {LaneStatus.EXECUTING}

    services.run_cancel(run=run, user=admin)

    run.refresh_from_db()
    assert run.status == RunStatus.CANCELLED and run.score_status == ScoreStatus.SKIPPED
    assert set(run.lanes.values_list("status", flat=True)) == {LaneStatus.CANCELLED}
    assert LaneStatusHistory.objects.filter(lane__run=run, to_status=LaneStatus.CANCELLED, reason="the run was cancelled").count() == 2
    assert not CaseRun.objects.filter(run=run, status__in=[CaseStatus.QUEUED, CaseStatus.RUNNING]).exists()

    client = client_for(admin)
    page = client.get(url("detail", run.pk)).content.decode()
    assert "Executing" not in page and page.count('data-lane-status="cancelled"') == 2
    assert "This run was cancelled" in page
    scorecard = htmx(client, reverse("scoring:run_scorecard", args=["acme", run.pk])).content.decode()
    assert "Not scored" in scorecard and "Scoring pending" not in scorecard and "hx-trigger" not in scorecard
    for partial in ("run-status", "run-live"):
        assert htmx(client, url("detail", run.pk, partial=partial)).status_code == 286, partial


def test_a_run_that_fails_early_fails_its_open_lanes(workspace, admin, tasks):
    run = started_run(workspace, admin, tasks)
    from runs.lifecycle import run_transition

    assert run_transition(run_id=run.pk, to=RunStatus.FAILED, reason="the sandbox host went away")
    run.refresh_from_db()
    assert run.score_status == ScoreStatus.SKIPPED
    lanes = list(run.lanes.all())
    assert {lane.status for lane in lanes} == {LaneStatus.FAILED}
    assert all(lane.failure_reason == "the run failed: the sandbox host went away" for lane in lanes)


def test_the_reaper_ends_a_case_left_running_in_a_cancelled_run(workspace, admin, tasks):
    run = started_run(workspace, admin, tasks, lanes=1)
    case = CaseRun.objects.filter(run=run).first()
    CaseRun.objects.filter(pk=case.pk).update(status=CaseStatus.RUNNING, attempt=1, heartbeat_at=timezone.now() - dt.timedelta(minutes=5))
    services.run_cancel(run=run, user=admin)

    assert services.run_reap()["closed"] == 1
    case.refresh_from_db()
    assert case.status == CaseStatus.CANCELLED and "worker stopped responding" in case.error


# -- fair racing --------------------------------------------------------------------------------


def test_the_start_dispatches_lanes_interleaved(workspace, admin, tasks):
    run = started_run(workspace, admin, tasks, cases=4, lanes=3, in_flight=3)
    sent = [args[0] for name, args, _ in tasks.items if name == "runs.case_run_execute"]
    lanes = dict(CaseRun.objects.filter(pk__in=sent).values_list("pk", "lane__lane_index"))
    assert [lanes[pk] for pk in sent] == [0, 1, 2] * 3  # A1 B1 C1 A2 B2 C2 …, three in flight per lane
    assert CaseRun.objects.filter(run=run, dispatched_at__isnull=True).count() == 3


# -- the live run page ----------------------------------------------------------------------------


def test_the_live_tick_puts_progress_in_the_page_title(workspace, admin, tasks, client_for):
    run = started_run(workspace, admin, tasks)
    CaseRun.objects.filter(pk=CaseRun.objects.filter(run=run).first().pk).update(status=CaseStatus.COMPLETED)
    response = htmx(client_for(admin), url("detail", run.pk, partial="run-live"))
    body = response.content.decode()
    assert response.status_code == 200
    assert f"<title>(1/6) {run.name} · AgentClash</title>" in body
    assert 'data-count="queued">3<' in body and 'data-count="running">0<' in body  # per lane
    assert 'hx-trigger="every 500ms"' in body  # the poller renews itself


def test_an_unchanged_results_page_is_not_sent_again(workspace, admin, tasks, client_for):
    run = started_run(workspace, admin, tasks)
    client = client_for(admin)
    body = htmx(client, url("detail", run.pk, partial="run-live")).content.decode()
    assert 'id="run-results-body"' in body  # no digest yet: sent
    digest = body.split("digest=")[1].split('"')[0]
    same = htmx(client, url("detail", run.pk, partial="run-live", digest=digest)).content.decode()
    assert 'id="run-results-body"' not in same and 'id="run-status"' in same

    case = CaseRun.objects.filter(run=run).order_by("position", "lane__lane_index").first()
    CaseRun.objects.filter(pk=case.pk).update(status=CaseStatus.RUNNING, attempt=1)
    changed = htmx(client, url("detail", run.pk, partial="run-live", digest=digest))
    assert (
        changed.status_code == 200
        and 'id="run-results-body" data-view="matrix" data-state="#1" hx-swap-oob="true"' in changed.content.decode()
    )
    assert "Running" in changed.content.decode()


def test_the_matrix_has_a_row_per_case_and_a_cell_per_lane(race, viewer, client_for):
    body = client_for(viewer).get(url("detail", race.pk)).content.decode()
    assert body.count('class="cell tone-pass"') == 5 and body.count('class="cell tone-fail"') == 1
    wrong = CaseRun.objects.get(run=race, lane__label="wrong", case_key="case-1")
    assert f'href="{url("case_replay", race.pk, wrong.pk)}" data-cell="{wrong.pk}"' in body
    assert "no idea" in body  # the start of the final output
    assert "Lanes differ" in body


@pytest.mark.parametrize(
    "query, rows",
    [({}, {"case-0", "case-1", "case-2"}), ({"show": "failures"}, {"case-1"}), ({"show": "disagreements"}, {"case-1"})],
)
def test_the_matrix_filters_to_failures_and_disagreements(race, viewer, client_for, query, rows):
    body = htmx(client_for(viewer), url("detail", race.pk, **query), HTTP_HX_TARGET="run-results").content.decode()
    assert body.lstrip().startswith('<section class="card" id="run-results"')
    assert {key for key in ("case-0", "case-1", "case-2") if f"<code>{key}</code>" in body} == rows


def test_a_filter_answer_leaves_the_form_alone_and_follows_with_the_rest(race, viewer, client_for):
    """The filter form targets #run-results-body: its answer never carries the form (what the reader
    typed meanwhile stays), and brings the counts, the clear link and a poller for the new filter."""
    body = htmx(client_for(viewer), url("detail", race.pk, show="failures", q="case"), HTTP_HX_TARGET="run-results-body").content.decode()
    assert body.lstrip().startswith('<div id="run-results-body" data-view="matrix" data-state="show=failures&amp;q=case#1">')
    assert "results-filters" not in body and 'id="results-q"' not in body
    assert 'id="results-head" hx-swap-oob="true"' in body and "1 of 3 cases" in body
    assert 'id="results-clear" hx-swap-oob="true"><a class="btn btn-small"' in body and "Clear filters" in body
    assert {key for key in ("case-0", "case-1", "case-2") if f"<code>{key}</code>" in body} == {"case-1"}
    cleared = htmx(client_for(viewer), url("detail", race.pk), HTTP_HX_TARGET="run-results-body").content.decode()
    assert 'id="results-clear" hx-swap-oob="true"></span>' in cleared and "3 cases × " in cleared


def test_the_matrix_shows_one_validators_verdicts(race, viewer, client_for):
    client = client_for(viewer)
    body = client.get(url("detail", race.pk, validator="answer", show="failures")).content.decode()
    assert '<option value="answer" selected>' in body
    assert "<code>case-1</code>" in body and "<code>case-0</code>" not in body
    unknown = client.get(url("detail", race.pk, validator="nope")).content.decode()
    assert '<option value="">Overall verdict</option>' in unknown and "<code>case-0</code>" in unknown


def test_the_list_view_filters_by_lane(race, viewer, client_for):
    wrong = race.lanes.get(label="wrong")
    body = client_for(viewer).get(url("detail", race.pk, view="list", lane=wrong.pk)).content.decode()
    assert 'id="run-cases"' in body and body.count("data-case-run=") == 3


def test_the_run_page_reads_a_fixed_number_of_queries(race, viewer, client_for, django_assert_max_num_queries, tasks, admin, workspace):
    client = client_for(viewer)
    client.get(url("detail", race.pk))
    with django_assert_max_num_queries(40) as few:
        client.get(url("detail", race.pk))
    bigger = services.run_create(
        workspace=workspace,
        user=admin,
        pack_version=publish(workspace, admin, native_pack_yaml(cases=12)),
        deployment_ids=[lane.deployment_id for lane in race.lanes.all()],
    )
    tasks.drain()
    with django_assert_max_num_queries(len(few.captured_queries)):
        client.get(url("detail", bigger.pk))


# -- the replay -------------------------------------------------------------------------------------


def test_the_replay_shows_times_tokens_cost_and_what_the_model_received(race, viewer, client_for):
    case = CaseRun.objects.get(run=race, lane__label="right", case_key="case-0")
    body = client_for(viewer).get(url("case_replay", race.pk, case.pk, view="events")).content.decode()
    assert "took " in body and '<time datetime="' in body and "+" in body
    assert " in / " in body and "out tokens" in body and "$0 (free)" in body  # scripted is free
    assert "Model input: 2 messages" in body and "Model input: 2 messages (+2 earlier)" in body
    assert 'class="msg msg-user"' in body and "Read notes.txt and submit its content." in body
    assert 'class="msg msg-tool"' in body and "note number 0" in body
    inputs = list(RunEvent.objects.filter(case_run=case, event_type=MODEL_CALL_STARTED).order_by("sequence_number"))
    assert url("case_model_input", race.pk, case.pk, inputs[1].pk) in body  # "Show the whole input"


def test_the_whole_input_of_a_model_call_is_rebuilt(race, viewer, client_for):
    case = CaseRun.objects.get(run=race, lane__label="right", case_key="case-0")
    second = RunEvent.objects.filter(case_run=case, event_type=MODEL_CALL_STARTED).order_by("sequence_number")[1]
    client = client_for(viewer)
    body = htmx(client, url("case_model_input", race.pk, case.pk, second.pk)).content.decode()
    assert "<html" not in body and "4 messages in total." in body
    roles = [part.split('"')[0] for part in body.split('class="msg msg-')[1:]]
    assert roles[-2:] == ["assistant", "tool"] and roles[-3] == "user"
    assert client.get(url("case_model_input", race.pk, case.pk, second.pk)).status_code == 200
    other = CaseRun.objects.get(run=race, lane__label="wrong", case_key="case-0")
    assert client.get(url("case_model_input", race.pk, other.pk, second.pk)).status_code == 404


def test_model_inputs_are_stored_redacted(workspace, admin, tasks):
    run = started_run(workspace, admin, tasks, lanes=1)
    case = CaseRun.objects.filter(run=run).first()
    payload: JSONObject = {"messages_from": 0, "messages": [{"role": "user", "content": "use the key sk-live-0123456789abcdef please"}]}
    event = Event(
        event_id="t:1", event_type=MODEL_CALL_STARTED, source="native_engine", occurred_at="2026-01-01T00:00:00.000Z", payload=payload
    )
    run_events_append(
        run_id=run.pk, lane_id=case.lane_id, case_run_id=case.pk, attempt=1, events=[event], redactor=Redactor(["sk-live-0123456789abcdef"])
    )
    stored = RunEvent.objects.get(event_id="t:1").payload
    assert "sk-live-0123456789abcdef" not in str(stored) and stored["messages"][0]["content"].startswith("use the key ")


def test_the_replay_links_to_the_neighbouring_cases_and_the_other_lane(race, viewer, client_for):
    right = {c.case_key: c for c in CaseRun.objects.filter(run=race, lane__label="right")}
    other = CaseRun.objects.get(run=race, lane__label="wrong", case_key="case-1")
    body = client_for(viewer).get(url("case_replay", race.pk, right["case-1"].pk)).content.decode()
    assert f'rel="prev" data-hotkey="p" href="{url("case_replay", race.pk, right["case-0"].pk)}"' in body
    assert f'rel="next" data-hotkey="n" href="{url("case_replay", race.pk, right["case-2"].pk)}"' in body
    assert f'href="{url("case_replay", race.pk, other.pk)}" data-hotkey="o"' in body and "Same case in wrong" in body
    assert f'href="{url("case_side_by_side", race.pk, right["case-1"].pk, other.pk)}"' in body


def test_the_side_by_side_view_lines_up_two_lanes_on_one_case(race, viewer, client_for):
    right = CaseRun.objects.get(run=race, lane__label="right", case_key="case-1")
    wrong = CaseRun.objects.get(run=race, lane__label="wrong", case_key="case-1")
    client = client_for(viewer)
    body = client.get(url("case_side_by_side", race.pk, right.pk, wrong.pk)).content.decode()
    assert "Step 1" in body and "Step 2" in body and "Result" in body
    assert "note number 1" in body and "no idea" in body
    assert "Passed" in body and "Not passed" in body
    assert 'id="side-by-side" hx-get' not in body  # both finished: nothing to poll
    elsewhere = CaseRun.objects.get(run=race, lane__label="wrong", case_key="case-2")
    assert client.get(url("case_side_by_side", race.pk, right.pk, elsewhere.pk)).status_code == 404
    assert client.get(url("case_side_by_side", race.pk, right.pk, right.pk)).status_code == 404


def test_the_replay_of_a_running_case_appends_new_events_and_stops_when_scored(workspace, admin, tasks, client_for):
    run = started_run(workspace, admin, tasks, lanes=1, cases=1)
    case = CaseRun.objects.get(run=run)
    client = client_for(admin)
    page = client.get(url("case_replay", run.pk, case.pk, view="events")).content.decode()
    assert "partial=replay-tail&after=0" in page and "waiting for a worker" in page

    tasks.drain()  # the case runs and is scored
    tail = htmx(client, url("case_replay", run.pk, case.pk, partial="replay-tail", after=0))
    body = tail.content.decode()
    assert tail.status_code == 286  # finished and scored: the last answer
    assert 'hx-swap-oob="beforeend:#timeline"' in body and "Final output" in body
    assert 'id="replay-summary"' in body and 'hx-swap-oob="true"' in body and 'data-status="completed"' in body
    last = RunEvent.objects.filter(case_run=case).order_by("-sequence_number").first().sequence_number
    assert (
        'hx-swap-oob="beforeend'
        not in htmx(client, url("case_replay", run.pk, case.pk, partial="replay-tail", after=last)).content.decode()
    )


def test_a_stranger_gets_404_on_the_new_replay_pages(race, stranger, client_for):
    case = CaseRun.objects.filter(run=race).first()
    other = CaseRun.objects.filter(run=race, case_key=case.case_key).exclude(pk=case.pk).first()
    event = RunEvent.objects.filter(case_run=case, event_type=MODEL_CALL_STARTED).first()
    client = client_for(stranger)
    assert client.get(url("case_model_input", race.pk, case.pk, event.pk)).status_code == 404
    assert client.get(url("case_side_by_side", race.pk, case.pk, other.pk)).status_code == 404
    assert Run.objects.filter(pk=race.pk).exists()


def test_a_huge_payload_is_shown_in_part_with_a_link_to_the_whole_of_it(workspace, admin, tasks, client_for, stranger):
    # issue 23: 100 events of 250 kB made a 12.3 MB replay page that took 6.2 s.
    run = started_run(workspace, admin, tasks, lanes=1)
    case = CaseRun.objects.filter(run=run).first()
    big = "x" * 250_000
    events = [
        Event(
            event_id=f"t:big:{n}",
            event_type="tool.call.completed",
            source="hosted",
            occurred_at="2026-01-01T00:00:00.000Z",
            payload={"tool_name": "dump", "arguments": {"n": n}, "result": {"content": big + "END", "is_error": False}},
        )
        for n in range(100)
    ]
    run_events_append(run_id=run.pk, lane_id=case.lane_id, case_run_id=case.pk, attempt=1, events=events)
    client = client_for(admin)
    response = client.get(url("case_replay", run.pk, case.pk))
    body = response.content.decode()
    assert response.status_code == 200 and len(body) < 3_000_000, len(body)  # every event of the page, each cut
    assert "Shown in part: the first 16384 of" in body and "END" not in body
    assert "The conversation is long" in body  # the transcript stops at its character budget
    stored = RunEvent.objects.filter(case_run=case, event_id__startswith="t:big:").order_by("sequence_number").first()
    link = url("case_event_payload", run.pk, case.pk, stored.pk)
    assert link in body
    whole = client.get(link)
    assert whole.status_code == 200 and whole["Content-Type"] == "application/json"
    assert whole.json()["result"]["content"].endswith("END")
    assert client_for(stranger).get(link).status_code == 404
    other = CaseRun.objects.filter(run=run).exclude(pk=case.pk).first()
    assert client.get(url("case_event_payload", run.pk, other.pk, stored.pk)).status_code == 404  # not this case's event

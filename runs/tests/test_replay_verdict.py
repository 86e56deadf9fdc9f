"""The replay explains itself (issue 25, item 3): the verdict and each validator's result, reason
and expected-vs-got word marks at the top; the conversation by default, the events one click away.
"""

from __future__ import annotations

import re
from types import SimpleNamespace

import pytest
from django.urls import reverse

from core.textdiff import word_diff
from engine import events as ev
from runs.models import CaseRun
from runs.tests import test_live
from runs.tests.test_live import htmx, started_run, url
from runs.transcript import transcript

pytestmark = pytest.mark.django_db

race = test_live.race  # the fixture: lane "right" passes every case, lane "wrong" fails case-1


def test_word_diff_marks_only_the_word_that_differs():
    diff = word_diff("listen on port 8000 now", "listen on the port 8080 now")
    assert not diff.same
    # one word for a like one: the characters that differ ("8000" and "8080" no longer read the same)
    assert [p.text for p in diff.left if p.changed] == ["0"] and "".join(
        p.text for p in diff.left if not p.changed
    ) == "listen on port 800 now"
    assert [p.text for p in diff.right if p.changed] == ["the ", "8"]
    assert "".join(p.text for p in diff.left) == "listen on port 8000 now"
    assert [p.text for p in word_diff("yes", "no").left if p.changed] == ["yes"]  # unlike words: the whole word
    assert word_diff("same", "same").same


def test_side_by_side_marks_what_differs_between_the_lanes(race, viewer, client_for):
    right = CaseRun.objects.get(run=race, lane__label="right", case_key="case-1")
    wrong = CaseRun.objects.get(run=race, lane__label="wrong", case_key="case-1")
    body = client_for(viewer).get(url("case_side_by_side", race.pk, right.pk, wrong.pk)).content.decode()
    left_side = body.split('data-side="left"')[-1].split('data-side="right"')[0]
    right_side = body.split('data-side="right"')[-1]
    left_final = left_side.split("<strong>Final output</strong>")[1].split("</div>")[0]
    right_final = right_side.split("<strong>Final output</strong>")[1].split("</div>")[0]
    assert '<del class="wd-del">' in left_final and '<ins class="wd-ins">no idea</ins>' in right_final


def _event(kind, payload, attempt=1, event_id="e"):
    return SimpleNamespace(event_type=kind, payload=payload, attempt=attempt, event_id=event_id, pk=1)


def test_the_transcript_shows_each_prompt_once_and_folds_a_repeated_final_answer():
    events = [
        _event(
            ev.MODEL_CALL_STARTED,
            {"messages_from": 0, "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi?"}]},
        ),
        _event(ev.MODEL_CALL_COMPLETED, {"output_text": "", "tool_calls": [{"name": "read_file", "arguments": {"path": "a"}}]}),
        _event(ev.TOOL_CALL_COMPLETED, {"tool_name": "read_file", "result": {"content": "A", "is_error": False}}),
        # a recorder that sent the whole conversation again: the prompt is not repeated
        _event(
            ev.MODEL_CALL_STARTED,
            {
                "messages_from": 0,
                "messages": [
                    {"role": "system", "content": "Be brief."},
                    {"role": "user", "content": "Hi?"},
                    {"role": "assistant", "content": ""},
                    {"role": "tool", "content": "A"},
                ],
            },
        ),
        _event(ev.MODEL_CALL_COMPLETED, {"output_text": "A", "tool_calls": []}),
        _event(ev.SYSTEM_RUN_COMPLETED, {"final_output": "A"}),
    ]
    turns = transcript(events)
    assert [t.role for t in turns] == ["system", "user", "assistant", "tool", "final"]
    assert turns[2].calls == [("read_file", '{"path": "a"}')] and turns[3].name == "read_file"


def test_the_transcript_keeps_only_the_last_attempt():
    events = [
        _event(ev.MODEL_CALL_STARTED, {"messages_from": 0, "messages": [{"role": "user", "content": "first try"}]}, attempt=1),
        _event(ev.SYSTEM_RUN_FAILED, {"stop_reason": "provider_error", "error": "boom"}, attempt=1),
        _event(ev.MODEL_CALL_STARTED, {"messages_from": 0, "messages": [{"role": "user", "content": "second try"}]}, attempt=2),
    ]
    assert [t.text for t in transcript(events)] == ["second try"]


def test_a_failed_case_says_why_at_the_top_with_the_differing_words_marked(race, viewer, client_for):
    case = CaseRun.objects.get(run=race, lane__label="wrong", case_key="case-1")
    body = client_for(viewer).get(url("case_replay", race.pk, case.pk)).content.decode()
    verdict = body[body.index('id="replay-verdict"') : body.index('id="replay-summary"')]
    assert "Why this case failed" in verdict and "0 of 1 check passed" in verdict
    assert '<span class="badge badge-fail">Failed</span>' in verdict
    assert re.search(r'<pre class="wd" data-side="expected">.*<del class="wd-del">', verdict, re.S)
    assert '<ins class="wd-ins">no idea</ins></pre>' in verdict and '<del class="wd-del">note number 1</del></pre>' in verdict
    assert body.index('id="replay-verdict"') < body.index('id="transcript"')
    scorecard = reverse("scoring:lane_scorecard", args=["acme", race.pk, case.lane_id])
    assert f'href="{scorecard}#case-{case.pk}"' in verdict


def test_the_replay_opens_on_the_conversation_and_the_events_are_one_click_away(race, viewer, client_for):
    case = CaseRun.objects.get(run=race, lane__label="right", case_key="case-0")
    client = client_for(viewer)
    body = client.get(url("case_replay", race.pk, case.pk)).content.decode()
    assert 'href="?view=transcript" aria-current="page"' in body and 'href="?view=events"' in body
    assert 'class="msg msg-user"' in body and "Read notes.txt and submit its content." in body
    assert "Calls <code>read_file</code>" in body and 'class="msg msg-tool"' in body and "note number 0" in body
    assert "Raw event JSON" not in body  # the events are the other view
    assert '<h2 id="verdict-title">Passed' in body and "wd-del" not in body
    events = client.get(url("case_replay", race.pk, case.pk, view="events")).content.decode()
    assert 'href="?view=events" aria-current="page"' in events and "Raw event JSON" in events and 'id="transcript"' not in events


def test_a_running_case_has_no_verdict_yet_and_its_conversation_polls_until_scored(workspace, admin, tasks, client_for):
    run = started_run(workspace, admin, tasks, cases=1, lanes=1)
    case = CaseRun.objects.get(run=run)
    client = client_for(admin)
    page = client.get(url("case_replay", run.pk, case.pk)).content.decode()
    assert re.search(r'<section id="replay-verdict"[^>]*hidden', page)
    assert "partial=replay-transcript" in page and "waiting for a worker" in page
    tasks.drain()
    tick = htmx(client, url("case_replay", run.pk, case.pk, partial="replay-transcript"))
    assert tick.status_code == 286  # finished and scored: the last answer
    body = tick.content.decode()
    assert 'id="transcript"' in body and "hx-trigger" not in body.split('id="replay-verdict"')[0]
    assert re.search(r'<section id="replay-verdict"[^>]*hx-swap-oob="true"', body) and "Passed" in body
    assert 'id="replay-summary"' in body


def test_a_stranger_gets_404_on_both_replay_views(race, stranger, client_for):
    case = CaseRun.objects.get(run=race, lane__label="wrong", case_key="case-1")
    client = client_for(stranger)
    assert client.get(url("case_replay", race.pk, case.pk)).status_code == 404
    assert client.get(url("case_replay", race.pk, case.pk, view="events")).status_code == 404
    assert htmx(client, url("case_replay", race.pk, case.pk, partial="replay-transcript")).status_code == 404

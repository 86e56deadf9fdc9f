"""The live run page, the results matrix and the replay in a real browser, with a real worker.

Each test would have caught a defect of issue 11: cancelled runs left lanes "Executing" and the
scorecard "pending" for ever; the case table never changed while the run ran; lane B waited for
lane A to finish; the replay was a static page. Cases sleep in the sandbox (``exec sleep``) so
that the run is still going while the page is watched.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.db.models import Max, Min
from playwright.sync_api import expect

from core.tests.browser import login
from runs import queue, services
from runs.models import CaseRun, CaseStatus, LaneStatus, Run, RunStatus, ScoreStatus
from runs.tests.factories import READ_AND_SUBMIT, make_deployment, native_pack_yaml, publish
from runs.tests.fixtures import TaskQueue
from runs.tests.worker import wait_for
from workspaces.tests.factories import PASSWORD

pytestmark = [pytest.mark.browser, pytest.mark.services, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

TIMEOUT_MS = 40_000


def sleeper(seconds: float) -> list[Any]:
    """Sleep in the sandbox, then read the note and hand it in (a passing answer)."""
    return [{"tool": "exec", "args": {"command": ["sleep", str(seconds)]}}, *READ_AND_SUBMIT]


def shell_pack(workspace, user, cases: int):
    source = native_pack_yaml(cases=cases).replace("allowed_tool_kinds: [file]", "allowed_tool_kinds: [file]\n    allow_shell: true")
    return publish(workspace, user, source)


def run_url(live_server, workspace, run, suffix: str = "") -> str:
    return f"{live_server.url}/w/{workspace.slug}/runs/{run.pk}/{suffix}"


def test_cancelling_a_running_run_ends_its_lanes_and_scorecard_and_stops_polling(live_server, page, worker, workspace, member):
    version = shell_pack(workspace, member, cases=6)
    lanes = [make_deployment(workspace, name=name, script=sleeper(3), max_in_flight_cases=2) for name in ("tortoise", "hare")]
    run = services.run_create(workspace=workspace, user=member, pack_version=version, deployment_ids=[d.pk for d in lanes])
    worker.start()
    login(page, live_server.url, member.username, PASSWORD)
    page.goto(run_url(live_server, workspace, run))
    page.locator("#run-status [data-status=running]").wait_for()
    assert wait_for(lambda: CaseRun.objects.filter(run=run, status=CaseStatus.RUNNING).count() >= 2, timeout=30)

    page.once("dialog", lambda dialog: dialog.accept())  # "Cancel this run?"
    page.get_by_role("button", name="Cancel run").click()
    page.locator("#run-status [data-status=cancelled]").wait_for()

    # Every lane reaches a terminal state on the page, without a reload; none stays "Executing".
    page.locator('#run-status [data-lane-status="cancelled"]').nth(1).wait_for()
    assert "Executing" not in page.inner_text("#run-status")
    assert page.locator("#run-status .lane-card .badge", has_text="Cancelled").count() == 2
    # The scorecard says it will not come instead of "pending… updates by itself" for ever.
    scorecard = page.locator('#run-scorecard[data-score-status="skipped"]')
    scorecard.wait_for()
    assert "Not scored" in scorecard.inner_text() and "Scoring pending" not in scorecard.inner_text()
    run.refresh_from_db()
    assert run.status == RunStatus.CANCELLED and run.score_status == ScoreStatus.SKIPPED
    assert set(run.lanes.values_list("status", flat=True)) == {LaneStatus.CANCELLED}

    # Once the running cases have stopped, the page stops polling: no request for two seconds.
    page.locator('#run-status[data-live="false"]').wait_for(timeout=TIMEOUT_MS)
    assert not CaseRun.objects.filter(run=run, status__in=[CaseStatus.RUNNING, CaseStatus.QUEUED]).exists()
    polls: list[str] = []

    def record(request) -> None:
        if "partial=" in request.url or "scorecard" in request.url:
            polls.append(request.url)

    page.on("request", record)
    page.wait_for_timeout(2500)
    assert polls == []
    assert "Cancelled" in page.inner_text("#run-results")  # the cases that never ran say so in the matrix


def test_lanes_race_side_by_side_instead_of_one_after_the_other(live_server, page, worker, workspace, member):
    version = shell_pack(workspace, member, cases=4)
    lanes = [make_deployment(workspace, name=name, script=sleeper(1.5)) for name in ("first", "second")]
    run = services.run_create(workspace=workspace, user=member, pack_version=version, deployment_ids=[d.pk for d in lanes])
    login(page, live_server.url, member.username, PASSWORD)
    page.goto(run_url(live_server, workspace, run))
    worker.start()

    # With two worker slots and two lanes, each lane runs one case at a time, together.
    both_running = """() => {
      const cards = [...document.querySelectorAll('#run-status .lane-card')];
      return cards.length === 2 && cards.every(c => Number(c.querySelector('[data-count=running]').textContent) === 1);
    }"""
    page.wait_for_function(both_running, timeout=TIMEOUT_MS)
    assert "Running" in page.inner_text("#run-status")

    assert wait_for(lambda: Run.objects.get(pk=run.pk).status == RunStatus.COMPLETED, timeout=90)
    first_finish = CaseRun.objects.filter(run=run).aggregate(t=Min("finished_at"))["t"]
    for lane in run.lanes.all():
        started = CaseRun.objects.filter(lane=lane).aggregate(first=Min("started_at"), last=Max("finished_at"))
        assert started["first"] < first_finish, f"lane {lane.label} waited for another lane"


def test_the_page_shows_cases_finishing_while_the_run_is_still_running(live_server, page, worker, workspace, member):
    version = shell_pack(workspace, member, cases=4)
    # 4 s a case keeps the run going for ~12 s after the first pass, enough for the checks below under CI load.
    lanes = [make_deployment(workspace, name=name, script=sleeper(4), max_in_flight_cases=1) for name in ("steady", "calm")]
    run = services.run_create(workspace=workspace, user=member, pack_version=version, deployment_ids=[d.pk for d in lanes])
    login(page, live_server.url, member.username, PASSWORD)
    page.goto(run_url(live_server, workspace, run))
    assert page.locator("#run-results a.cell.tone-queued").count() == 8
    page.evaluate("window.__sameDocument = true")  # a reload would drop it
    worker.start()

    # A case turns Pass in the matrix while the run is still running, and the tab title counts it.
    page.locator("#run-results a.cell.tone-pass").first.wait_for(timeout=TIMEOUT_MS)
    assert page.locator("#run-status [data-status=running]").count() == 1
    page.wait_for_function(r"() => /^\([1-7]\/8\) .* · AgentClash$/.test(document.title)")  # within a poll
    # The scorecard shows the standings so far.
    page.locator("#run-scorecard table.standings").wait_for()

    # The list view shows a row turning Completed while the run still runs.
    page.get_by_role("link", name="List").click()
    page.locator("#run-cases").wait_for()
    completed = page.locator("#run-cases tbody tr", has=page.locator(".badge-completed"))
    completed.first.wait_for()
    queued_or_running = page.locator("#run-cases tbody tr", has=page.locator(".badge-queued, .badge-running"))
    assert queued_or_running.count() >= 1 and page.locator("#run-status [data-status=running]").count() == 1
    assert "view=list" in page.url  # the view is in the address, so a reload keeps it

    # The run ends: the ranking arrives and every region stops polling, still without a reload.
    page.locator("#run-status [data-status=completed]").wait_for(timeout=60_000)
    page.locator('#run-scorecard[data-score-status="scored"] table').wait_for(timeout=TIMEOUT_MS)
    # Each region refreshes on its own poll: the cases list catches up within one.
    expect(page.locator("#run-cases .badge-completed")).to_have_count(8, timeout=TIMEOUT_MS)
    assert page.title() == f"{run.name} · Completed · AgentClash"
    assert page.evaluate("window.__sameDocument") is True


def _finished_race(workspace, user):
    """Two lanes on three cases, lane "wrong" fails case-1; executed in-process."""
    version = publish(workspace, user, native_pack_yaml(cases=3))
    right = make_deployment(workspace, name="right")
    wrong = make_deployment(workspace, name="wrong", script={"default": READ_AND_SUBMIT, "cases": {"case-1": [{"submit": "no idea"}]}})
    captured = TaskQueue()
    queue.capture(captured.items)
    try:
        run = services.run_create(workspace=workspace, user=user, pack_version=version, deployment_ids=[right.pk, wrong.pk])
        captured.drain()
    finally:
        queue.capture(None)
    return run


def test_the_matrix_is_driven_from_the_keyboard_and_filtered(live_server, page, workspace, member):
    run = _finished_race(workspace, member)
    cases = {(c.lane.label, c.case_key): c.pk for c in CaseRun.objects.filter(run=run).select_related("lane")}
    login(page, live_server.url, member.username, PASSWORD)
    page.goto(run_url(live_server, workspace, run))
    focused = "() => document.activeElement.dataset.cell"

    page.keyboard.press("j")  # into the matrix: the first cell
    assert page.evaluate(focused) == str(cases[("right", "case-0")])
    page.keyboard.press("l")
    assert page.evaluate(focused) == str(cases[("wrong", "case-0")])
    page.keyboard.press("j")
    page.keyboard.press("ArrowDown")
    assert page.evaluate(focused) == str(cases[("wrong", "case-2")])
    page.keyboard.press("k")
    page.keyboard.press("ArrowRight")  # nothing to the right: stays
    assert page.evaluate(focused) == str(cases[("wrong", "case-1")])
    assert "tone-fail" in page.evaluate("() => document.activeElement.className")
    page.keyboard.press("Enter")
    page.wait_for_url(run_url(live_server, workspace, run, f"cases/{cases[('wrong', 'case-1')]}/"))
    assert "no idea" in page.inner_text("#transcript") and "no idea" in page.inner_text("#replay-verdict ins")

    # On the replay: the same case in the other lane, then both side by side.
    page.keyboard.press("o")
    page.wait_for_url(run_url(live_server, workspace, run, f"cases/{cases[('right', 'case-1')]}/"))
    page.keyboard.press("s")
    page.wait_for_url(run_url(live_server, workspace, run, f"cases/{cases[('right', 'case-1')]}/vs/{cases[('wrong', 'case-1')]}/"))
    assert "note number 1" in page.inner_text("[data-side=left]") and "no idea" in page.inner_text("[data-side=right]")

    # Back on the run page, the filters: failures only, then disagreements.
    page.goto(run_url(live_server, workspace, run))
    page.select_option("#results-show", "failures")
    page.wait_for_url("**show=failures**")
    rows = page.locator("#run-results tbody tr")
    rows.first.wait_for()
    assert rows.count() == 1 and "case-1" in rows.first.inner_text()
    page.select_option("#results-validator", "answer")
    page.wait_for_url("**validator=answer**")
    assert page.locator("#run-results tbody tr").count() == 1
    page.reload()  # the filters live in the address
    assert page.locator("#run-results tbody tr").count() == 1 and page.input_value("#results-show") == "failures"


def test_the_replay_of_a_running_case_fills_in_as_it_runs(live_server, page, worker, workspace, member):
    version = shell_pack(workspace, member, cases=1)
    deployment = make_deployment(
        workspace, name="patient", script=[*[{"tool": "exec", "args": {"command": ["sleep", "1"]}}] * 3, {"submit": "done"}]
    )
    run = services.run_create(workspace=workspace, user=member, pack_version=version, deployment_ids=[deployment.pk])
    case = CaseRun.objects.get(run=run)
    login(page, live_server.url, member.username, PASSWORD)
    page.goto(run_url(live_server, workspace, run, f"cases/{case.pk}/?view=events"))
    assert "waiting for a worker" in page.inner_text("#timeline-empty")
    page.evaluate("window.__sameDocument = true")
    worker.start()

    # Steps appear while the case runs: the model's input, a model call with its tokens, a tool.
    page.locator("#timeline details.step.input").first.wait_for(timeout=TIMEOUT_MS)
    page.locator("#timeline details.step", has_text="Tool exec").first.wait_for(timeout=TIMEOUT_MS)
    assert page.locator('#replay-summary [data-status="running"]').count() == 1
    assert "out tokens" in page.inner_text("#timeline") and "took" in page.inner_text("#timeline")
    first_input = page.locator("#timeline details.step.input").first
    first_input.locator(":scope > summary").click()
    assert "Read notes.txt and submit its content." in first_input.inner_text()

    # It finishes and is scored: the final output and verdict arrive, and the polling ends.
    page.locator("#timeline details.step.final").wait_for(timeout=TIMEOUT_MS)
    page.locator('#replay-summary [data-status="completed"]').wait_for()
    page.locator("#replay-summary .badge-passed, #replay-summary .badge-fail").first.wait_for(timeout=TIMEOUT_MS)
    page.locator("#replay-poll:not([hx-get])").wait_for(state="attached")
    assert page.locator("#timeline details.step", has_text="Tool exec").count() == 3
    assert page.evaluate("window.__sameDocument") is True

    # The whole input of a later model call opens in place.
    page.locator("#timeline details.step.input").nth(2).locator(":scope > summary").click()
    page.locator("#timeline details.step.input").nth(2).get_by_role("link", name=re.compile("Show the whole input")).click()
    page.locator("#timeline details.step.input").nth(2).locator("text=6 messages in total.").wait_for()

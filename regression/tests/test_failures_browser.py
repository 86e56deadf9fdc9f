"""The failures review in a real browser: from the run page, filter by class, follow a replay link."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from core.tests.browser import login
from engine.events import TOOL_CALL_FAILED
from runs.models import CaseRun, Lane, RunEvent
from scoring.tests.factories import ANSWERS, make_run
from workspaces.tests.factories import PASSWORD

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def test_a_reviewer_opens_the_failures_filters_by_class_and_follows_a_replay_link(live_server, page, workspace, viewer):
    run = make_run(workspace, lanes=[dict(ANSWERS), {**ANSWERS, "three-squared": "10"}])
    tool_case = CaseRun.objects.get(run=run, lane__lane_index=0, case_key="two-plus-two")
    lane = Lane.objects.get(pk=tool_case.lane_id)
    RunEvent.objects.create(
        run=run, lane=lane, case_run=tool_case, event_id="test:tool-failed", sequence_number=lane.next_sequence,
        event_type=TOOL_CALL_FAILED, source="native_engine", occurred_at=run.created_at, case_key=tool_case.case_key,
        payload={"tool_name": "read_file", "failure_origin": "primitive"},
    )  # fmt: skip

    login(page, live_server.url, viewer.username, PASSWORD)

    page.goto(f"{live_server.url}/w/{workspace.slug}/runs/{run.pk}/")
    link = page.locator("[data-failures-link]")
    expect(link).to_contain_text("1")  # one case failed; the tool failure is on a passed case (info)
    link.click()
    page.wait_for_url(re.compile(r".*/failures/$"))
    expect(page.locator(".failure-cluster")).to_have_count(2)

    page.select_option("#failure-filters select[name=class]", "tool_failure")
    page.click("#failure-filters button[type=submit]")
    page.wait_for_url(re.compile(r".*class=tool_failure.*"))
    clusters = page.locator(".failure-cluster")
    expect(clusters).to_have_count(1)
    expect(clusters.first.locator("h2")).to_have_text("Tool failure · tool read_file failed")
    expect(page.locator("#failure-filters select[name=class]")).to_have_value("tool_failure")

    clusters.first.locator("[data-replay-link]").click()
    page.wait_for_url(f"{live_server.url}/w/{workspace.slug}/runs/{run.pk}/cases/{tool_case.pk}/")
    expect(page.locator("body")).to_contain_text("two-plus-two")

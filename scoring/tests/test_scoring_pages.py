"""Scorecard pages: the run's ranking fragment, the lane scorecard, JSON download; personas."""

from __future__ import annotations

import json

import pytest

from runs.models import CaseRun, Run, RunStatus, ScoreStatus
from scoring.tests.factories import make_run

pytestmark = pytest.mark.django_db

GOOD = {"two-plus-two": "4", "three-squared": "9"}
SLOPPY = {"two-plus-two": "5", "three-squared": "9"}


def test_run_scorecard_ranks_lanes_and_highlights_the_winner(workspace, viewer, client_for):
    run = make_run(workspace, lanes=[SLOPPY, GOOD])
    sloppy, good = run.lanes.order_by("lane_index")
    response = client_for(viewer).get(f"/w/{workspace.slug}/runs/{run.pk}/scorecard/", HTTP_HX_REQUEST="true")
    html = response.content.decode()
    assert response.status_code == 200 and "<html" not in html
    assert html.index("deployment-1") < html.index("deployment-0")  # the good lane ranks first
    assert '<tr class="highlight">' in html and "Winner" in html
    assert "<svg" in html and "data-sortable" in html and "sortable.js" in html
    assert 'hx-trigger="every' not in html  # scored: no polling
    assert f"/w/{workspace.slug}/runs/{run.pk}/lanes/{good.pk}/scorecard/" in html


def test_run_scorecard_polls_while_pending_and_says_so(workspace, viewer, client_for):
    run = make_run(workspace, lanes=[GOOD], score=False, status=RunStatus.SCORING)
    html = client_for(viewer).get(f"/w/{workspace.slug}/runs/{run.pk}/scorecard/", HTTP_HX_REQUEST="true").content.decode()
    assert "Scoring pending" in html and 'hx-trigger="every 1s"' in html
    assert "standings" in html  # the lanes so far, while there is no ranking


def test_run_scorecard_of_a_run_that_ended_early_says_it_is_not_scored_and_does_not_poll(workspace, viewer, client_for):
    run = make_run(workspace, lanes=[GOOD], score=False, status=RunStatus.CANCELLED)
    run.score_status = ScoreStatus.SKIPPED
    run.save(update_fields=["score_status"])
    html = client_for(viewer).get(f"/w/{workspace.slug}/runs/{run.pk}/scorecard/", HTTP_HX_REQUEST="true").content.decode()
    assert "Not scored" in html and "cancelled before every lane finished" in html and "hx-trigger" not in html


def test_run_scorecard_says_when_scoring_failed(workspace, viewer, client_for):
    run = make_run(workspace, lanes=[GOOD], score=False)
    run.score_status = ScoreStatus.ERRORED
    run.save(update_fields=["score_status"])
    html = client_for(viewer).get(f"/w/{workspace.slug}/runs/{run.pk}/scorecard/").content.decode()
    assert "Scoring failed" in html


@pytest.mark.parametrize("status, text", [("pending", "Scoring pending"), ("errored", "Scoring failed"), ("skipped", "Not scored")])
def test_the_run_page_shows_each_scoring_state_without_a_poll_of_its_own(workspace, viewer, client_for, status, text):
    run = make_run(workspace, lanes=[GOOD], score=False)
    Run.objects.filter(pk=run.pk).update(score_status=status)
    html = client_for(viewer).get(f"/w/{workspace.slug}/runs/{run.pk}/").content.decode()
    region = html.split('id="run-scorecard"')[1].split("</section>")[0]
    assert text in region and "hx-get" not in region  # the run page's one poller refreshes it


def test_lane_scorecard_page_shows_deck_cases_diff_and_markdown(workspace, viewer, client_for):
    run = make_run(workspace, lanes=[SLOPPY])
    lane = run.lanes.get()
    failing = CaseRun.objects.get(run=run, case_key="two-plus-two")
    response = client_for(viewer).get(f"/w/{workspace.slug}/runs/{run.pk}/lanes/{lane.pk}/scorecard/")
    html = response.content.decode()
    assert response.status_code == 200
    assert "Dimensions" in html and "correctness" in html and "gate · below" in html
    assert "Only failures" in html and "badge-fail" in html
    assert "+5" in html and "-4" in html  # expected vs actual diff
    assert f"/w/{workspace.slug}/runs/{run.pk}/cases/{failing.pk}/?event=" in html
    assert "Copy as Markdown" in html and "| two-plus-two | fail |" in html


def test_lane_scorecard_page_filters_to_failures(workspace, viewer, client_for):
    run = make_run(workspace, lanes=[SLOPPY])
    lane = run.lanes.get()
    html = client_for(viewer).get(f"/w/{workspace.slug}/runs/{run.pk}/lanes/{lane.pk}/scorecard/?failures=1").content.decode()
    table = html[html.index('id="cases"') :]
    assert "two-plus-two" in table and "<code>three-squared</code></a>" not in table


def test_lane_scorecard_page_lists_the_first_cases_with_a_link_to_all(workspace, viewer, client_for, monkeypatch):
    from scoring import views

    monkeypatch.setattr(views, "CASES_PER_PAGE", 1)  # 100 in the product; two cases here
    run = make_run(workspace, lanes=[SLOPPY])
    lane = run.lanes.get()
    first, second = CaseRun.objects.filter(lane=lane).order_by("position", "pk")
    url = f"/w/{workspace.slug}/runs/{run.pk}/lanes/{lane.pk}/scorecard/"
    client = client_for(viewer)
    html = client.get(url).content.decode()
    table = html[html.index('id="cases"') :]
    assert f"<code>{first.case_key}</code></a>" in table and f"<code>{second.case_key}</code></a>" not in table
    assert f'id="case-{second.pk}"' not in html  # its details are not read either
    assert "Showing the first 1 of 2 cases" in html and 'href="?all=1#cases"' in html
    assert "| two-plus-two | fail |" in html and "| three-squared |" not in html  # the Markdown follows the list…
    assert "… and 1 more case(s)" in html  # …and says what it left out
    every = client.get(url + "?all=1").content.decode()
    assert f"<code>{second.case_key}</code></a>" in every and "Showing the first" not in every
    assert "| three-squared | pass |" in every and "more case(s)" not in every
    failures = client.get(url + "?failures=1").content.decode()  # the failures view lists every failure
    assert "Showing the first" not in failures


def test_lane_scorecard_page_before_scoring(workspace, viewer, client_for):
    run = make_run(workspace, lanes=[GOOD], score=False)
    lane = run.lanes.get()
    html = client_for(viewer).get(f"/w/{workspace.slug}/runs/{run.pk}/lanes/{lane.pk}/scorecard/").content.decode()
    assert "Scoring pending" in html


def test_lane_scorecard_json_download(workspace, viewer, client_for):
    run = make_run(workspace, lanes=[SLOPPY])
    lane = run.lanes.get()
    response = client_for(viewer).get(f"/w/{workspace.slug}/runs/{run.pk}/lanes/{lane.pk}/scorecard.json")
    assert response.status_code == 200 and "attachment" in response["Content-Disposition"]
    body = json.loads(response.content)
    assert body["scorecard"]["pass_rate"] == 0.5 and len(body["cases"]) == 2
    assert body["statistics"]["trials"] == 1 and body["statistics"]["pass_rate_ci"] is None and body["statistics"]["uncertainty"]


@pytest.mark.parametrize("persona", ["admin", "member", "viewer"])
def test_members_can_read_every_scorecard_page(workspace, client_for, request, persona):
    run = make_run(workspace, lanes=[GOOD])
    lane = run.lanes.get()
    client = client_for(request.getfixturevalue(persona))
    for url in (
        f"/w/{workspace.slug}/runs/{run.pk}/scorecard/",
        f"/w/{workspace.slug}/runs/{run.pk}/lanes/{lane.pk}/scorecard/",
        f"/w/{workspace.slug}/runs/{run.pk}/lanes/{lane.pk}/scorecard.json",
        f"/w/{workspace.slug}/comparisons/",
        f"/w/{workspace.slug}/gates/",
    ):
        assert client.get(url).status_code == 200, url


def test_strangers_get_404_on_scorecard_pages(workspace, other_workspace, stranger, client_for):
    run = make_run(workspace, lanes=[GOOD])
    lane = run.lanes.get()
    client = client_for(stranger)
    for slug in (workspace.slug, other_workspace.slug):
        for url in (
            f"/w/{slug}/runs/{run.pk}/scorecard/",
            f"/w/{slug}/runs/{run.pk}/lanes/{lane.pk}/scorecard/",
            f"/w/{slug}/runs/{run.pk}/lanes/{lane.pk}/scorecard.json",
        ):
            assert client.get(url).status_code == 404, url


def test_a_lane_of_another_run_is_404(workspace, viewer, client_for):
    run = make_run(workspace, lanes=[GOOD])
    other = make_run(workspace, lanes=[GOOD])
    response = client_for(viewer).get(f"/w/{workspace.slug}/runs/{run.pk}/lanes/{other.lanes.get().pk}/scorecard/")
    assert response.status_code == 404


def test_a_prompt_only_lane_does_not_claim_a_workspace(workspace, viewer, client_for):
    """Issue 25: prompt_eval scorecards said "Evidence: native (full trace and workspace)"."""
    run = make_run(workspace, lanes=[GOOD])
    lane = run.lanes.get()
    native = client_for(viewer).get(f"/w/{workspace.slug}/runs/{run.pk}/lanes/{lane.pk}/scorecard/").content.decode()
    assert "native (full trace and workspace)" in native
    Run.objects.filter(pk=run.pk).update(execution_mode="prompt_eval")
    prompt = client_for(viewer).get(f"/w/{workspace.slug}/runs/{run.pk}/lanes/{lane.pk}/scorecard/").content.decode()
    assert "native (full trace; a prompt-only pack has no workspace)" in prompt and "full trace and workspace" not in prompt

"""Failed and cancelled mean the same on every page (issue 25): the run header, the lane cards and
their bars, the runs list and the failures review count with one rule (``runs.lookups``)."""

from __future__ import annotations

import re

import pytest

from runs.models import CaseRun, CaseStatus, Run, RunStatus, ScoreStatus
from runs.tests.test_live import started_run

pytestmark = pytest.mark.django_db


@pytest.fixture
def mixed(workspace, admin, tasks):
    """One lane, four cases: passed, wrong answer, stopped by an error, cancelled."""
    run = started_run(workspace, admin, tasks, cases=4, lanes=1)
    a, b, c, d = CaseRun.objects.filter(run=run).order_by("position")
    scored = {"score_status": ScoreStatus.SCORED}
    CaseRun.objects.filter(pk=a.pk).update(status=CaseStatus.COMPLETED, passed=True, stop_reason="completed", **scored)
    CaseRun.objects.filter(pk=b.pk).update(status=CaseStatus.COMPLETED, passed=False, stop_reason="completed", **scored)
    CaseRun.objects.filter(pk=c.pk).update(status=CaseStatus.FAILED, stop_reason="provider_error")
    CaseRun.objects.filter(pk=d.pk).update(status=CaseStatus.CANCELLED, stop_reason="cancelled")
    Run.objects.filter(pk=run.pk).update(status=RunStatus.CANCELLED)
    return Run.objects.get(pk=run.pk)


def test_the_run_page_header_lane_and_failures_link_agree(mixed, admin, client_for):
    page = client_for(admin).get(f"/w/acme/runs/{mixed.pk}/").content.decode()
    assert '<span data-count="passed">1 passed</span>' in page and '<span data-count="failed">2 failed</span>' in page
    assert '<span data-count="cancelled">1 cancelled</span>' in page
    assert re.search(r'data-count="failures-review">2<', page)  # the Failures link says the same 2
    lane = page.split('class="lane-done"')[1].split("</small>")[0]
    assert "3 / 4 cases done" in lane and "2 failed" in lane and "1 cancelled" in lane
    # the bar: a quarter green, half red, a quarter pale for the cancelled case — never red
    bar = page.split('class="progress progress-lane"')[1].split("</svg>")[0]
    assert 'class="seg-ok" width="25.00"' in bar and 'class="seg-failed" x="25.00" width="50.00"' in bar
    assert 'class="seg-cancelled" x="75.00" width="25.00"' in bar


def test_the_runs_list_counts_the_same_way(mixed, admin, client_for):
    page = client_for(admin).get("/w/acme/runs/").content.decode()
    row = page.split(f'data-run-id="{mixed.pk}"')[1].split("</tr>")[0]
    assert "3 / 4 cases done" in row and 'data-count="failed">2 failed' in row and 'data-count="cancelled">1 cancelled' in row
    assert "4 / 4" not in row


def test_the_failures_review_counts_the_same_way(mixed, admin, client_for):
    page = client_for(admin).get(f"/w/acme/runs/{mixed.pk}/failures/").content.decode()
    assert 'data-summary="failed">2<' in page and 'data-summary="cancelled">1 cancelled case' in page


def test_the_runs_list_says_just_now_for_a_run_started_this_minute(workspace, admin, tasks, client_for):
    started_run(workspace, admin, tasks, cases=1, lanes=1)
    page = client_for(admin).get("/w/acme/runs/").content.decode()
    assert "just now" in page and "0\xa0minutes ago" not in page and "0 minutes ago" not in page

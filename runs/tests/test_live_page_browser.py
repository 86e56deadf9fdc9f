"""One consistent live run page (issue 25, item 4), in headless Chromium: the page has one poller,
each of its answers updates every region from one snapshot, so the lanes' counts and the results
never disagree on screen; and the time from a change in the database to the screen, printed as
figures (p50 / p95 / max) for the report — a measurement, never a pass/fail threshold.
"""

from __future__ import annotations

import statistics
import time

import pytest
from playwright.sync_api import expect

from core.tests.browser import login
from runs import queue, services
from runs.models import CaseRun, CaseStatus, RunStatus
from runs.tests.factories import make_deployment, native_pack_yaml, publish
from runs.tests.fixtures import TASKS, TaskQueue
from runs.tests.test_browser_live import run_url
from workspaces.tests.factories import PASSWORD

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

# After each tick: the cases the lanes' progress bars call done, and the cells of the results that
# are neither queued nor running — one snapshot makes them equal.
RECORD_TICKS = """
document.addEventListener('htmx:afterSettle', (e) => {
  if (!e.detail.elt || e.detail.elt.id !== 'run-live') return;
  const done = [...document.querySelectorAll('#run-status [role=progressbar]')].reduce((n, b) => n + Number(b.getAttribute('aria-valuenow')), 0);
  const cells = document.querySelectorAll('#run-results a.cell:not(.tone-queued):not(.tone-running)').length;
  const seen = JSON.parse(sessionStorage.getItem('ticks') || '[]');
  seen.push([done, cells, Date.now()]);
  sessionStorage.setItem('ticks', JSON.stringify(seen));
});
"""


def _queued_run(workspace, user, cases: int):
    """A started run whose cases wait in the queue (no worker)."""
    version = publish(workspace, user, native_pack_yaml(cases=cases))
    deployment = make_deployment(workspace, name="steady")
    captured = TaskQueue()
    queue.capture(captured.items)
    try:
        run = services.run_create(workspace=workspace, user=user, pack_version=version, deployment_ids=[deployment.pk])
        for name, args, _ in list(captured.items):
            if name != "runs.case_run_execute":
                TASKS[name](*args)
    finally:
        queue.capture(None)
    run.refresh_from_db()
    assert run.status == RunStatus.RUNNING
    return run


def test_every_region_of_the_live_page_moves_together_within_a_tick(live_server, page, workspace, member):
    cases = 20
    run = _queued_run(workspace, member, cases)
    page.add_init_script(RECORD_TICKS)
    login(page, live_server.url, member.username, PASSWORD)
    page.goto(run_url(live_server, workspace, run))
    assert page.locator('[hx-trigger*="every"]').count() == 1  # one poller for the whole page
    bar = page.locator("#run-status [role=progressbar]")

    latencies = []
    for done, case in enumerate(CaseRun.objects.filter(run=run).order_by("position"), start=1):
        time.sleep(0.137 * (done % 7))  # changes land at every phase of the tick
        changed_at = time.time() * 1000
        CaseRun.objects.filter(pk=case.pk).update(status=CaseStatus.COMPLETED)
        expect(bar).to_have_attribute("aria-valuenow", str(done))
        assert page.locator(f'#run-results a.cell[data-cell="{case.pk}"]:not(.tone-queued)').count() == 1  # the same tick
        shown_at = None
        for _ in range(100):  # the tick's record lands at htmx's settle, just after the swap the bar showed
            ticks = page.evaluate("JSON.parse(sessionStorage.getItem('ticks'))")
            shown_at = next((at for seen, _, at in ticks if seen >= done), None)  # the first tick that put it on the screen
            if shown_at is not None:
                break
            page.wait_for_timeout(20)
        assert shown_at is not None, (done, ticks[-3:])
        latencies.append((shown_at - changed_at) / 1000)
    ticks = page.evaluate("JSON.parse(sessionStorage.getItem('ticks'))")
    assert all(done == cells for done, cells, _ in ticks), ticks
    ordered = sorted(latencies)
    p95 = ordered[max(0, round(0.95 * len(ordered)) - 1)]
    print(
        f"\nLIVE PAGE event→screen over {len(ordered)} changes: p50 {statistics.median(ordered):.3f} s, p95 {p95:.3f} s, max {ordered[-1]:.3f} s"
    )
    assert page.console_errors == []

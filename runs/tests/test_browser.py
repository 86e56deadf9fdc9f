"""Runs in a real browser, executed by a real Celery worker subprocess.

Start a run from the New run page, watch the progress bars fill, read the scorecard's winner and
open a case replay; cancel a slow run from its page. The live server thread and the worker share
the (file-based SQLite or PostgreSQL) test database and the configured broker.
"""

from __future__ import annotations

import json

import pytest

from core.tests.browser import login
from packs.models import PackVersion
from runs.models import CaseRun, CaseStatus, Run, RunStatus
from runs.tests.factories import make_deployment, native_pack_yaml, publish
from runs.tests.worker import wait_for
from workspaces.demo import demo_seed
from workspaces.tests.factories import PASSWORD

pytestmark = [pytest.mark.browser, pytest.mark.services, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

TIMEOUT_MS = 40_000

# Runs in every document the page loads:
# record the lanes' progress (cases done per lane) each time the DOM changes, in sessionStorage.
RECORD_PROGRESS = """
(() => {
  const record = () => {
    const bars = [...document.querySelectorAll('#run-status [role=progressbar]')];
    if (!bars.length) return;
    const now = bars.map(b => Number(b.getAttribute('aria-valuenow'))).join(',');
    const seen = JSON.parse(sessionStorage.getItem('progress') || '[]');
    if (seen[seen.length - 1] !== now) { seen.push(now); sessionStorage.setItem('progress', JSON.stringify(seen)); }
  };
  document.addEventListener('DOMContentLoaded', () => {
    record();
    new MutationObserver(record).observe(document.body, {childList: true, subtree: true, attributes: true});
  });
})();
"""


def test_a_run_started_from_the_page_fills_its_progress_bars_ranks_a_winner_and_replays(live_server, page, worker):
    demo = demo_seed()
    version = PackVersion.objects.get(workspace=demo.workspace, pack__slug="demo-file-fixes")
    ws = f"{live_server.url}/w/{demo.workspace.slug}"
    page.add_init_script(RECORD_PROGRESS)
    login(page, live_server.url, demo.username, demo.password)

    page.goto(f"{ws}/runs/new/")
    preview = page.locator("#run-preview")
    page.select_option("#id_pack_version_id", str(version.pk))
    preview.filter(has_text="0 agents × 3 cases").wait_for()  # htmx re-rendered the form for this version
    page.get_by_label("Good agent", exact=True).check()
    preview.filter(has_text="1 agent × 3 cases").wait_for()
    page.get_by_label("Sloppy agent", exact=True).check()
    preview.filter(has_text="2 agents × 3 cases = 6 case runs").wait_for()
    page.fill("#id_name", "Good versus sloppy")
    page.click("#run-create-form button[type=submit]")
    page.wait_for_url(f"{ws}/runs/*/")
    run = Run.objects.get(workspace=demo.workspace)
    assert page.url == f"{ws}/runs/{run.pk}/"
    assert "Run “Good versus sloppy” started." in page.inner_text(".messages")
    assert page.locator("#run-status [role=progressbar]").count() == 2

    worker.start()  # only now, so the page certainly shows the bars empty first
    page.locator("#run-status [data-status=completed]").wait_for(timeout=TIMEOUT_MS)
    bars = page.locator("#run-status [role=progressbar]")
    assert [bars.nth(i).get_attribute("aria-valuenow") for i in range(2)] == ["3", "3"]
    assert "3 / 3 cases done" in page.inner_text("#run-status")
    seen = [[int(n) for n in item.split(",")] for item in json.loads(page.evaluate("sessionStorage.getItem('progress')"))]
    assert seen[0] == [0, 0] and seen[-1] == [3, 3], seen
    assert all(a <= b for before, after in zip(seen, seen[1:], strict=False) for a, b in zip(before, after, strict=True)), seen

    # The scorecard arrives by htmx (it polls while scoring is pending) and names the winner.
    # While scoring is pending the region shows live standings (a table too), so wait for the winner.
    scorecard = page.locator("#run-scorecard")
    winner_row = scorecard.locator("tbody tr.highlight")
    winner_row.wait_for(timeout=TIMEOUT_MS)
    assert winner_row.count() == 1
    assert "Winner" in winner_row.inner_text() and "Good agent" in winner_row.inner_text()
    assert "Winner: Good agent" in scorecard.inner_text()
    assert scorecard.locator("tbody tr").count() == 2

    # Replay a case of the winning lane: the timeline shows tool calls and the final output.
    case = CaseRun.objects.get(run=run, lane__deployment__name="Good agent", case_key="port-typo")
    page.locator(f'#run-results a.cell[data-cell="{case.pk}"]').click()  # its cell in the results matrix
    page.wait_for_url(f"{ws}/runs/{run.pk}/cases/{case.pk}/")
    assert "port-typo" in page.inner_text("h1")
    assert page.locator("#verdict-title").inner_text().startswith("Passed")  # the verdict is on top
    assert "fixed port" in page.inner_text("#transcript .msg-final")  # the conversation is the default
    page.get_by_role("link", name="Events", exact=True).click()
    page.wait_for_url("**view=events")
    assert page.get_by_role("heading", name="Events").is_visible()
    timeline = page.inner_text(".main")
    assert "Tool read_config" in timeline and "Tool write_file" in timeline
    final = page.locator("details.step.final")
    assert final.count() == 1 and "fixed port" in final.inner_text()


def test_a_member_cancels_a_running_run_from_its_page(live_server, page, worker, workspace, member):
    version = publish(workspace, member, native_pack_yaml(cases=30))
    # Slow by model latency, not by step count: a case is ~0.6 s however fast the worker's path gets.
    slow = [{"tool": "read_file", "args": {"path": "/workspace/notes.txt"}}] * 20 + [{"submit": "{{last_result}}"}]
    deployment = make_deployment(workspace, name="slowpoke", script=slow, max_iterations=200, max_in_flight_cases=2)
    deployment.deployment_config["latency_ms"] = 30
    deployment.save(update_fields=["deployment_config"])
    worker.start()
    login(page, live_server.url, member.username, PASSWORD)

    from runs import services

    run = services.run_create(workspace=workspace, user=member, pack_version=version, deployment_ids=[deployment.pk])
    page.goto(f"{live_server.url}/w/{workspace.slug}/runs/{run.pk}/")
    page.locator("#run-status [data-status=running]").wait_for(timeout=TIMEOUT_MS)
    assert wait_for(lambda: CaseRun.objects.filter(run=run, status=CaseStatus.RUNNING).exists(), timeout=30)

    page.once("dialog", lambda dialog: dialog.accept())  # "Cancel this run?"
    page.get_by_role("button", name="Cancel run").click()
    page.locator("#run-status [data-status=cancelled]").wait_for()
    assert "Cancelled" in page.inner_text("#run-status h1")
    assert "Run cancelled." in page.inner_text(".messages")
    assert page.get_by_role("button", name="Cancel run").count() == 0
    run.refresh_from_db()
    assert run.status == RunStatus.CANCELLED

    # Cases in progress notice and stop; none is left running and the rest never start.
    assert wait_for(lambda: not CaseRun.objects.filter(run=run, status__in=[CaseStatus.RUNNING, CaseStatus.QUEUED]).exists(), timeout=20)
    statuses = list(CaseRun.objects.filter(run=run).values_list("status", flat=True))
    assert statuses.count(CaseStatus.CANCELLED) >= 10, statuses
    page.reload()
    assert "Cancelled" in page.inner_text("#run-results")

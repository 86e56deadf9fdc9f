"""Repeated trials in a real browser: the New-run page's repeats field and the replay's trial switcher."""

from __future__ import annotations

import pytest

from core.tests.browser import csp_violations, login
from runs import queue, services
from runs.models import CaseRun, Run
from runs.tests.factories import make_deployment, native_pack_yaml, publish
from runs.tests.fixtures import TaskQueue
from workspaces.tests.factories import PASSWORD

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def test_the_replay_moves_between_trials_with_links_and_keys(live_server, page, workspace, member):
    version = publish(workspace, member, native_pack_yaml(cases=2))
    deployment = make_deployment(workspace, name="reader")
    captured = TaskQueue()
    queue.capture(captured.items)
    try:
        run = services.run_create(workspace=workspace, user=member, pack_version=version, deployment_ids=[deployment.pk], repeats=3)
        captured.drain()
    finally:
        queue.capture(None)
    trials = list(CaseRun.objects.filter(run=run, case_key="case-1").order_by("trial"))
    base = f"{live_server.url}/w/{workspace.slug}/runs/{run.pk}/cases/"
    login(page, live_server.url, member.username, PASSWORD)

    page.goto(f"{base}{trials[0].pk}/")
    switcher = page.locator("#trial-switcher")
    assert "Trial 1 of 3" in switcher.inner_text()
    switcher.get_by_role("link", name="trial 2 →").click()
    page.wait_for_url(f"{base}{trials[1].pk}/")
    assert "Trial 2 of 3" in page.inner_text("#trial-switcher")
    page.keyboard.press("]")
    page.wait_for_url(f"{base}{trials[2].pk}/")
    assert "last trial →" in page.inner_text("#trial-switcher")
    page.keyboard.press("[")
    page.wait_for_url(f"{base}{trials[1].pk}/")
    page.locator("#trial-switcher a.trial-link[data-trial='1']").click()
    page.wait_for_url(f"{base}{trials[0].pk}/")
    # The run page's matrix cell says k/n passed and opens trial 1.
    page.goto(f"{live_server.url}/w/{workspace.slug}/runs/{run.pk}/")
    cell = page.locator(f"a.cell[data-cell='{trials[0].pk}']")
    assert "3/3 passed" in cell.inner_text()
    cell.click()
    page.wait_for_url(f"{base}{trials[0].pk}/")
    assert csp_violations(page) == []


def test_the_new_run_page_starts_a_run_with_repeats_and_refuses_a_bad_value(live_server, page, workspace, member):
    version = publish(workspace, member, native_pack_yaml(cases=3))
    make_deployment(workspace, name="reader")
    captured = TaskQueue()
    queue.capture(captured.items)
    try:
        login(page, live_server.url, member.username, PASSWORD)
        page.goto(f"{live_server.url}/w/{workspace.slug}/runs/new/")
        preview = page.locator("#run-preview")
        page.select_option("#id_pack_version_id", str(version.pk))
        page.get_by_label("reader", exact=True).check()
        preview.filter(has_text="1 agent × 3 cases = 3 case runs").wait_for()
        page.fill("#id_repeats", "51")
        page.click("#run-create-form button[type=submit]")
        error = page.locator("#run-repeats .error")
        error.wait_for()
        assert "repeats must be an integer from 1 to 50" in error.inner_text()
        assert not Run.objects.exists()
        page.fill("#id_repeats", "4")
        page.locator("#id_repeats").dispatch_event("change")
        preview.filter(has_text="× 4 trials = 12 case runs").wait_for()
        page.click("#run-create-form button[type=submit]")
        page.wait_for_url(f"{live_server.url}/w/{workspace.slug}/runs/*/")
        run = Run.objects.get()
        assert run.repeats == 4 and CaseRun.objects.filter(run=run).count() == 12
        assert "12 case runs (3 cases × 4 trials)" in page.inner_text("#run-trials")
    finally:
        queue.capture(None)

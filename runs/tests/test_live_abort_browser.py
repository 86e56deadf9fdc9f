"""No ``htmx:sendAbort`` console errors on the live run page (issue 25): changing a filter while
the page's poller has a tick in flight, and leaving the page mid-tick, log nothing as an error."""

from __future__ import annotations

import pytest

from core.tests.browser import login
from runs.tests.test_browser_live import run_url
from runs.tests.test_live_page_browser import _queued_run
from workspaces.tests.factories import PASSWORD

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

# Count the page's requests and swaps. (An abort is seen only as htmx's console error: the aborted
# request's element is often already swapped out, so its event never reaches the document.)
RECORD = """
window.__seen = {sent: 0, swapped: 0};
document.addEventListener('htmx:beforeSend', () => { window.__seen.sent += 1; });
document.addEventListener('htmx:afterSwap', () => { window.__seen.swapped += 1; });
"""


def test_changing_a_filter_mid_tick_logs_no_console_error(live_server, page, workspace, member):
    run = _queued_run(workspace, member, 6)
    page.add_init_script(RECORD)
    login(page, live_server.url, member.username, PASSWORD)
    page.goto(run_url(live_server, workspace, run))
    assert page.locator('[hx-trigger*="every"]').count() == 1
    for _ in range(100):  # the poller ticks (wait_for_function would need 'unsafe-eval')
        if page.evaluate("window.__seen.sent") >= 2:
            break
        page.wait_for_timeout(50)
    show = page.locator("#results-show")
    choices = [o.get_attribute("value") for o in show.locator("option").all()]
    assert len(choices) >= 2
    for step in range(12):  # at every phase of the 500 ms tick
        page.wait_for_timeout(37 * (step % 5) + 11)
        show.select_option(choices[(step + 1) % len(choices)])
        page.locator("#results-q").fill(f"case{step % 3}")
        page.locator("#results-q").press("Enter")
    page.wait_for_timeout(1200)
    seen = page.evaluate("window.__seen")
    assert page.console_errors == [], page.console_errors
    assert seen["swapped"] >= 6, seen  # the filters and the ticks both ran
    assert "q=case2" in page.url and page.locator("#results-q").input_value() == "case2"  # the last filter won
    state = page.locator("#run-results-body").get_attribute("data-state")  # and its results are shown, not a late tick's
    last_show = choices[12 % len(choices)]
    assert page.locator("#results-show").input_value() == last_show
    assert state == (f"show={last_show}&" if last_show != "all" else "") + "q=case2#1", state


def test_leaving_the_page_mid_tick_logs_no_console_error(live_server, page, workspace, member):
    run = _queued_run(workspace, member, 6)
    page.add_init_script(RECORD)
    login(page, live_server.url, member.username, PASSWORD)
    url = run_url(live_server, workspace, run)
    for step in range(6):
        page.goto(url)
        page.wait_for_timeout(500 + 83 * step)
        page.locator("#run-results a.cell").first.click()
        page.wait_for_load_state()
        page.go_back()
        page.wait_for_timeout(300 + 61 * step)
        page.locator("#results-show").select_option("failures")
        page.wait_for_timeout(120 * step)
        page.go_back()
        page.wait_for_timeout(200)
    assert page.console_errors == [], page.console_errors


def test_searching_the_runs_list_aborts_no_request(live_server, page, workspace, member):
    """Enter in the search box fires ``change`` and ``search`` at once; ``hx-sync=replace`` aborted
    the first request, and htmx logs every abort as a console error (``htmx:sendAbort``). The
    newest change now waits behind the request in flight (``queue last``)."""
    _queued_run(workspace, member, 2)
    page.add_init_script(RECORD)
    login(page, live_server.url, member.username, PASSWORD)
    page.goto(f"{live_server.url}/w/{workspace.slug}/runs/")
    search = page.locator("#run-search")
    for text in ("steady", "nothing like it", "", "#1"):
        search.fill(text)
        search.press("Enter")
        page.locator("#run-filters select[name=status]").select_option(index=1)
        page.locator("#run-filters select[name=status]").select_option(index=0)
        page.wait_for_timeout(400)
    assert page.console_errors == [], page.console_errors
    assert "q=%231" in page.url and search.input_value() == "#1"  # the newest search won

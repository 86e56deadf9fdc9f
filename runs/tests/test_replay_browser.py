"""The replay that explains itself, in headless Chromium at 1280 and 390 px, light and dark: the
verdict with the differing words marked is on the first screen, the conversation is the default,
the events are one click away (issue 25, item 3). Screenshots go to ``var/screens/`` to look at.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from django.conf import settings

from core.tests.browser import DESKTOP, PHONE, chromium_page, csp_violations, login, page_overflows
from runs.models import CaseRun
from runs.tests.test_browser_live import _finished_race, run_url
from workspaces.tests.factories import PASSWORD

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

SCREENS = Path(settings.BASE_DIR) / "var" / "screens"


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["1280", "390"])
@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_a_failed_case_opens_on_its_verdict_and_conversation(live_server, chromium_path, workspace, member, viewport, scheme):
    run = _finished_race(workspace, member)
    case = CaseRun.objects.get(run=run, lane__label="wrong", case_key="case-1")
    with chromium_page(chromium_path, viewport=viewport, color_scheme=scheme) as page:
        login(page, live_server.url, member.username, PASSWORD)
        page.goto(run_url(live_server, workspace, run, f"cases/{case.pk}/"))
        verdict = page.locator("#replay-verdict")
        assert verdict.get_by_role("heading").inner_text().startswith("Why this case failed")
        box = verdict.locator(".validator.is-failed").bounding_box()
        assert box is not None and box["y"] < viewport["height"] * 1.5  # near the top, not behind a link
        assert verdict.locator("del.wd-del").inner_text() == "note number 1"
        assert verdict.locator("ins.wd-ins").inner_text() == "no idea"
        assert "expected substring not found" in verdict.inner_text()
        assert "no idea" in page.inner_text("#transcript .msg-final")
        SCREENS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SCREENS / f"replay-verdict-{viewport['width']}-{scheme}.png"), full_page=True)
        wide = page.evaluate(
            "[...document.querySelectorAll('body *')].filter(e => e.getBoundingClientRect().right > window.innerWidth + 1).slice(0, 5).map(e => e.tagName + '.' + e.className)"
        )
        assert not page_overflows(page), wide

        page.get_by_role("link", name="Events", exact=True).click()
        page.wait_for_url("**view=events")
        page.locator("#timeline details.step.final").wait_for()
        assert page.locator("#transcript").count() == 0 and page.locator("#replay-verdict .validator").count() == 1
        page.get_by_role("link", name="Conversation", exact=True).click()
        page.wait_for_url("**view=transcript")
        page.locator("#transcript").wait_for()

        # The evidence link opens the events at the event the validator read.
        page.get_by_role("link", name="See the evidence").click()
        page.wait_for_url("**event=**")
        target = page.locator("details.step:target")
        target.wait_for()
        assert "Final output" in target.inner_text()
        assert csp_violations(page) == [] and page.console_errors == []

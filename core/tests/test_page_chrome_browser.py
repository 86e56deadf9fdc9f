"""Every page's chrome (issue 25): a skip link as the first Tab stop (it took 42 Tab presses to
reach the results matrix), and a favicon (its 404 was a console error on every page)."""

from __future__ import annotations

import pytest

from core.tests.browser import PHONE, chromium_page, login
from workspaces.tests.factories import PASSWORD

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]


@pytest.mark.parametrize("viewport", [None, PHONE], ids=["1280", "390"])
def test_the_first_tab_is_a_skip_link_to_the_content_and_the_favicon_loads(live_server, chromium_path, member, viewport):
    with chromium_page(chromium_path, viewport=viewport) as page:
        login(page, live_server.url, member.username, PASSWORD)
        page.goto(f"{live_server.url}/w/acme/runs/")
        page.keyboard.press("Tab")
        focused = page.evaluate("() => [document.activeElement.className, document.activeElement.textContent]")
        assert focused == ["skip-link", "Skip to the content"]
        box = page.locator(".skip-link").bounding_box()
        assert box is not None and box["y"] >= 0  # shown when focused
        page.keyboard.press("Enter")
        assert page.evaluate("() => document.activeElement.id") == "content"
        icon = page.evaluate("() => document.querySelector('link[rel=icon]').href")
        assert page.request.get(icon).status == 200
        assert page.console_errors == []

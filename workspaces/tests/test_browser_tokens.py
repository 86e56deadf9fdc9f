"""The API-token page in a real browser: creating redirects (a reload creates nothing) and Copy copies."""

from __future__ import annotations

import pytest

from core.tests.browser import chromium_page, csp_violations, login
from workspaces.models import ApiToken
from workspaces.tests.factories import PASSWORD

pytestmark = [pytest.mark.browser, pytest.mark.services, pytest.mark.django_db(transaction=True)]


def test_a_new_token_is_shown_once_after_a_redirect_and_the_copy_button_copies_it(live_server, chromium_path, admin):
    base = live_server.url
    with chromium_page(chromium_path, permissions=["clipboard-read", "clipboard-write"], base_url=base) as page:
        login(page, base, admin.username, PASSWORD)
        page.goto(f"{base}/settings/api-tokens/")
        page.get_by_label("Name").fill("ci-runner")
        page.get_by_role("button", name="Create token").click()
        token = page.locator("#new-token")
        token.wait_for()
        assert page.url == f"{base}/settings/api-tokens/"  # post/redirect/get
        value = token.input_value()
        assert value.startswith("act_")

        page.get_by_role("button", name="Copy").click()
        page.get_by_role("button", name="Copied").wait_for()
        assert page.evaluate("() => navigator.clipboard.readText()") == value

        page.reload()
        assert page.locator("#new-token").count() == 0
        assert value not in page.content()
        assert ApiToken.objects.filter(user=admin).count() == 1
        assert "ci-runner" in page.inner_text("table")
        assert csp_violations(page) == []

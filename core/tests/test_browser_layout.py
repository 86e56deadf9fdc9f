"""The shell in a real browser: a phone-sized window, dark mode, a styled 404 under DEBUG and
failed htmx requests that say what happened (issue 11, items 8 and 9)."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from comparisons import services as comparison_services
from core.tests.browser import PHONE, chromium_page, csp_violations, login, page_overflows
from infrastructure.models import AgentDeployment
from runs.tests.factories import demo_race

pytestmark = [pytest.mark.browser, pytest.mark.services, pytest.mark.slow, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def demo_with_a_comparison(live_server):
    demo, user, run = demo_race()
    good, sloppy = run.lanes.order_by("lane_index")
    comparison, _ = comparison_services.comparison_get_or_create(
        workspace=demo.workspace, user=user, baseline_run=run, candidate_run=run, baseline_lane=good, candidate_lane=sloppy
    )
    return demo, run, comparison


def test_on_a_phone_the_menu_folds_away_and_nothing_pushes_the_page_sideways(live_server, chromium_path, demo_with_a_comparison):
    demo, run, comparison = demo_with_a_comparison
    base, ws = live_server.url, f"{live_server.url}/w/{demo.workspace.slug}"
    with chromium_page(chromium_path, viewport=PHONE) as page:
        login(page, base, demo.username, demo.password)
        page.goto(f"{ws}/")
        menu, toggle = page.locator("#sidebar-menu"), page.locator("#nav-toggle")
        assert not menu.is_visible() and toggle.is_visible()
        heading = page.locator("#content h1").bounding_box()
        assert heading is not None and heading["y"] < 200  # the page starts on the first screen, not the menu

        toggle.click()
        assert menu.is_visible() and toggle.get_attribute("aria-expanded") == "true"
        page.keyboard.press("Escape")
        assert not menu.is_visible() and toggle.get_attribute("aria-expanded") == "false"
        toggle.click()
        menu.get_by_role("link", name="Runs").click()
        page.wait_for_url(f"{ws}/runs/")
        assert not page.locator("#sidebar-menu").is_visible()

        for path in ["/", "/runs/", f"/comparisons/{comparison.pk}/", "/comparisons/", "/deployments/", "/provider-accounts/",
                     "/runtime-profiles/", "/secrets/", f"/runs/{run.pk}/scorecard/", "/search/?q=agent"]:  # fmt: skip
            page.goto(f"{ws}{path}")
            assert not page_overflows(page), path
        page.goto(f"{ws}/runs/")
        wrap = page.locator("#run-table .table-wrap")
        assert wrap.evaluate("el => el.scrollWidth > el.clientWidth")  # the table scrolls inside its box
        assert csp_violations(page) == []


def test_dark_mode_follows_the_system_setting(live_server, chromium_path, demo_with_a_comparison):
    demo, _, comparison = demo_with_a_comparison
    base, ws = live_server.url, f"{live_server.url}/w/{demo.workspace.slug}"
    background = "() => getComputedStyle(document.body).backgroundColor"
    with chromium_page(chromium_path, color_scheme="dark") as page:
        login(page, base, demo.username, demo.password)
        page.goto(f"{ws}/comparisons/{comparison.pk}/")
        assert page.evaluate(background) == "rgb(15, 18, 24)"
        card = page.locator(".card").first.evaluate("el => getComputedStyle(el).backgroundColor")
        assert card == "rgb(23, 27, 35)"
        text = page.evaluate("() => getComputedStyle(document.body).color")
        assert text == "rgb(227, 231, 238)"
    with chromium_page(chromium_path, color_scheme="light") as page:
        login(page, base, demo.username, demo.password)
        assert page.evaluate(background) == "rgb(246, 247, 249)"


def test_unknown_urls_get_the_styled_404_even_with_debug_on(live_server, chromium_path, settings, demo_with_a_comparison):
    settings.DEBUG = True  # the default local setup (agentclash/settings/local.py)
    demo, _, _ = demo_with_a_comparison
    base, ws = live_server.url, f"{live_server.url}/w/{demo.workspace.slug}"
    with chromium_page(chromium_path) as page:
        response = page.goto(f"{base}/no-such-page/")
        assert response is not None and response.status == 404
        assert page.inner_text("h1") == "Page not found"
        assert "URLconf" not in page.content() and "Using the URLconf" not in page.content()
        login(page, base, demo.username, demo.password)
        for path in (f"{ws}/no-such-page/", f"{ws}/runs/999999/", f"{ws}/comparisons/999999/"):
            response = page.goto(path)
            assert response is not None and response.status == 404, path
            assert page.inner_text("h1") == "Page not found", path
            assert page.locator(".sidebar").is_visible()  # inside the app's shell, with a way back
            assert "Technical details" not in page.content() and "Traceback" not in page.content()
        page.get_by_role("link", name=f"Back to {demo.workspace.name}").click()
        page.wait_for_url(f"{ws}/")
        assert csp_violations(page) == []


def test_a_failed_htmx_request_says_what_happened(live_server, chromium_path, demo_with_a_comparison):
    demo, _, _ = demo_with_a_comparison
    base, ws = live_server.url, f"{live_server.url}/w/{demo.workspace.slug}"
    with chromium_page(chromium_path) as page:
        login(page, base, demo.username, demo.password)

        # Someone deleted the deployment after this page loaded: Edit explains instead of doing nothing.
        page.goto(f"{ws}/deployments/")
        doomed = AgentDeployment.objects.get(workspace=demo.workspace, name="Sloppy agent (prompt eval)")
        doomed_pk = doomed.pk
        doomed.delete()
        page.locator("tr", has_text="Sloppy agent (prompt eval)").get_by_role("link", name="Edit").click()
        toast = page.locator("#request-errors .message-error")
        expect(toast).to_contain_text(f"There is nothing at /w/{demo.workspace.slug}/deployments/{doomed_pk}/edit/")
        toast.get_by_role("button", name="Dismiss").click()
        expect(toast).to_have_count(0)

        # A server error on a filter says so (and the page stays usable).
        page.goto(f"{ws}/runs/")
        page.route(
            "**/runs/?**",
            lambda route: route.fulfill(status=500, body="<p>boom</p>") if route.request.headers.get("hx-request") else route.continue_(),
        )
        page.select_option("#run-filters select[name=status]", "completed")
        expect(toast).to_contain_text("Something went wrong on our side")
        assert csp_violations(page) == []

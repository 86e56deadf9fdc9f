"""The second-wave pages as a person sees them (docs/ui-review.md): nothing pushes a phone page
sideways, every control has a name, the current filter looks current and modes read as words.

Demo data with one finished run (the sloppy agent fails all three cases) and a suite holding one
promoted case, as a reviewer would have it after the first look at the failures.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from playwright.sync_api import expect

from core.tests.browser import PHONE, chromium_page, csp_violations, login, page_overflows
from infrastructure.models import ProviderAccount
from regression import services as regression_services
from regression.models import RegressionCase, RegressionSuite
from runs.models import CaseRun, Run
from runs.tests.factories import demo_race
from workspaces.demo import DemoResult

pytestmark = [pytest.mark.browser, pytest.mark.services, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

UNLABELLED_CONTROLS = """() => [...document.querySelectorAll('#content input:not([type=hidden]), #content select, #content textarea')]
  .filter(e => !(e.labels && e.labels.length) && !e.getAttribute('aria-label') && !e.getAttribute('aria-labelledby'))
  .map(e => e.name || e.id)"""


@dataclass
class Reviewed:
    demo: DemoResult
    run: Run
    failed: CaseRun
    suite: RegressionSuite


@pytest.fixture
def reviewed(live_server) -> Reviewed:
    demo, user, run = demo_race()
    failed = CaseRun.objects.filter(run=run, lane__lane_index=1).order_by("pk").first()
    assert failed is not None
    suite = regression_services.regression_suite_create(
        workspace=demo.workspace, user=user, pack=run.pack_version.pack, name="File fixes regressions with a long name"
    )
    regression_services.regression_case_promote(workspace=demo.workspace, user=user, case_run=failed, suite=suite)
    return Reviewed(demo=demo, run=run, failed=failed, suite=suite)


def test_on_a_phone_the_new_pages_scroll_their_tables_not_the_page(live_server, chromium_path, reviewed):
    demo, run = reviewed.demo, reviewed.run
    base, ws = live_server.url, f"{live_server.url}/w/{demo.workspace.slug}"
    with chromium_page(chromium_path, viewport=PHONE) as page:
        login(page, base, demo.username, demo.password)
        for path in [f"/runs/{run.pk}/", f"/runs/{run.pk}/failures/", f"/runs/{run.pk}/cases/{reviewed.failed.pk}/",
                     "/regression-suites/", f"/regression-suites/{reviewed.suite.pk}/", "/runs/new/",
                     "/provider-accounts/", "/deployments/", "/runtime-profiles/"]:  # fmt: skip
            page.goto(f"{ws}{path}")
            assert not page_overflows(page), path
        # The failures review: long validator names wrap, each cluster's table scrolls inside its box,
        # and the per-case Promote form (a hidden label, positioned absolutely) stays inside it too.
        page.goto(f"{ws}/runs/{run.pk}/failures/")
        wrap = page.locator(".failure-cluster .table-wrap").first
        assert wrap.evaluate("el => el.scrollWidth > el.clientWidth")
        expect(page.locator("[data-promote-form]").first).to_be_attached()
        assert page.evaluate(UNLABELLED_CONTROLS) == []
        # The New-run form once a pack version is chosen: suites, scope and peer standings fit.
        page.goto(f"{ws}/runs/new/")
        page.select_option("select[name=pack_version_id]", str(run.pack_version_id))
        expect(page.locator("#run-regression")).to_be_visible()
        assert not page_overflows(page)
        assert page.evaluate(UNLABELLED_CONTROLS) == []
        assert csp_violations(page) == []


def test_the_promote_form_on_the_replay_has_named_fields_and_promotes(live_server, chromium_path, reviewed):
    demo, run = reviewed.demo, reviewed.run
    base, ws = live_server.url, f"{live_server.url}/w/{demo.workspace.slug}"
    other = CaseRun.objects.filter(run=run, lane__lane_index=1).exclude(pk=reviewed.failed.pk).order_by("pk").first()
    assert other is not None
    with chromium_page(chromium_path) as page:
        login(page, base, demo.username, demo.password)
        page.goto(f"{ws}/runs/{run.pk}/cases/{other.pk}/")
        review = page.get_by_role("link", name="Failures review")  # a failed case leads back to its siblings
        assert review.get_attribute("href") == f"/w/{demo.workspace.slug}/runs/{run.pk}/failures/"
        form = page.get_by_role("form", name="Keep this failure as a regression case")
        form.get_by_label("Suite").select_option(str(reviewed.suite.pk))
        form.get_by_label("Severity").select_option("warning")
        form.get_by_role("button", name="Promote").click()
        page.locator(f'[data-promoted="{other.pk}"]').wait_for()  # promoted in place (issue 25's flywheel): no jump to the suite
        assert page.url.startswith(f"{ws}/runs/{run.pk}/cases/{other.pk}/")
        case = RegressionCase.objects.get(suite=reviewed.suite, source_case_run_id=other.pk)
        assert case.severity == "warning" and case.status == "proposed"


def test_the_current_suite_filter_looks_pressed_and_the_run_page_names_its_mode(live_server, chromium_path, reviewed):
    demo, run = reviewed.demo, reviewed.run
    base, ws = live_server.url, f"{live_server.url}/w/{demo.workspace.slug}"
    background = "el => getComputedStyle(el).backgroundColor"
    with chromium_page(chromium_path) as page:
        login(page, base, demo.username, demo.password)
        page.goto(f"{ws}/regression-suites/{reviewed.suite.pk}/?status=proposed")
        filters = page.get_by_role("navigation", name="Filter by status")
        current, other = filters.get_by_role("link", name="Proposed"), filters.get_by_role("link", name="All")
        assert current.get_attribute("aria-current") == "page" and other.get_attribute("aria-current") is None
        assert current.evaluate(background) != other.evaluate(background)
        expect(page.locator(".nav a[aria-current=page]")).to_have_text("Regression suites")

        page.goto(f"{ws}/runs/{run.pk}/")
        meta = page.locator(".run-meta")
        expect(meta).to_contain_text("· Native ·")
        expect(page.locator(".nav a[aria-current=page]")).to_have_text("Runs")
        passed = CaseRun.objects.filter(run=run, lane__lane_index=0).first()
        assert passed is not None
        page.goto(f"{ws}/runs/{run.pk}/cases/{passed.pk}/")
        expect(page.locator("#content h1")).to_be_visible()
        expect(page.get_by_role("link", name="Failures review")).to_have_count(0)  # nothing to review for a pass

        # A provider account with every limit set still fits a desktop window, Actions included.
        ProviderAccount.objects.filter(workspace=demo.workspace).update(
            max_concurrent_calls=4, requests_per_minute=600, tokens_per_minute=200_000
        )
        page.goto(f"{ws}/provider-accounts/")
        expect(page.locator("[data-limits]").first).to_contain_text("200,000 tokens/min")
        wrap = page.locator("#provider-accounts-table").locator("xpath=..")
        assert wrap.evaluate("el => el.scrollWidth <= el.clientWidth")

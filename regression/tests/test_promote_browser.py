"""Promote in place and in a batch from the failures review, in headless Chromium at 1280 and
390 px (issue 25, item 5); screenshots in ``var/screens/`` to look at, light and dark."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.conf import settings

from core.tests.browser import DESKTOP, PHONE, chromium_page, csp_violations, login, page_overflows
from regression.models import RegressionCase, RegressionSuite
from regression.tests.test_failures import case
from scoring.tests.factories import ANSWERS, make_run
from workspaces.tests.factories import PASSWORD

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

SCREENS = Path(settings.BASE_DIR) / "var" / "screens"


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["1280", "390"])
@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_a_reviewer_promotes_one_case_in_place_then_the_rest_at_once(live_server, chromium_path, workspace, member, viewport, scheme):
    wrong = {**ANSWERS, "three-squared": "10"}
    run = make_run(workspace, lanes=[dict(ANSWERS), dict(wrong), dict(wrong), dict(wrong)])
    RegressionSuite.objects.create(workspace=workspace, pack=run.pack_version.pack, name="nightly")
    first, second, third = (case(run, lane, "three-squared") for lane in (1, 2, 3))
    failures = f"{live_server.url}/w/{workspace.slug}/runs/{run.pk}/failures/"
    with chromium_page(chromium_path, viewport=viewport, color_scheme=scheme) as page:
        login(page, live_server.url, member.username, PASSWORD)
        page.goto(failures)
        page.locator(f'[data-promote-form="{first.pk}"]').get_by_role("button", name="Promote").click()
        page.locator(f'[data-promoted="{first.pk}"]').wait_for()
        assert page.url == failures  # no jump to the suite page
        assert "nightly" in page.locator(f'[data-promoted="{first.pk}"]').inner_text()
        assert RegressionCase.objects.filter(source_case_run=first).count() == 1

        page.locator(f'input[data-pick][value="{second.pk}"]').check()
        page.locator(f'input[data-pick][value="{third.pk}"]').check()
        page.get_by_role("button", name="Promote the ticked cases").click()
        page.locator(".messages").filter(has_text="Promoted 2 cases into “nightly”").wait_for()
        assert page.url == failures
        assert sorted(RegressionCase.objects.values_list("source_case_run_id", flat=True)) == sorted([first.pk, second.pk, third.pk])
        assert page.locator("[data-promote]").count() == 0 and page.locator("input[data-pick]").count() == 0  # nothing left to promote
        assert page.locator("[data-promoted]").count() == 3
        assert not page_overflows(page)
        SCREENS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SCREENS / f"failures-promoted-{viewport['width']}-{scheme}.png"), full_page=True)
        assert csp_violations(page) == [] and page.console_errors == []

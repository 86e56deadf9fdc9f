"""The results matrix, the exports, the offline report and share links in headless Chromium, at
1280 and 390 px, with four lanes (docs/runs.md): the matrix fits or scrolls inside its box, its
header and case column stay in view, a cell expands to its whole output, ``?q=`` searches on the
server, lanes can be hidden, and a share link is created, copied, opened and revoked."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import pytest
from playwright.sync_api import expect

from core.tests.browser import DESKTOP, PHONE, RECORD_VIOLATIONS, chromium_page, csp_violations, login, page_overflows
from infrastructure.models import AgentDeployment
from runs.models import CaseRun, Run, RunShare
from workspaces.demo import DemoResult

pytestmark = [pytest.mark.browser, pytest.mark.services, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

LONG = "{" + ", ".join(f'"key_{i}": {i}' for i in range(60)) + ', "extra_key_that_failed": true}'


@dataclass
class FourLanes:
    demo: DemoResult
    run: Run


@pytest.fixture
def four_lanes(live_server) -> FourLanes:
    """The demo's file-fixes pack raced by four lanes (Good, Good copy, Sloppy, Sloppy copy), run
    in-process; one answer is long, with the key that matters at its end."""
    from django.contrib.auth import get_user_model

    from packs.models import PackVersion
    from runs import queue, services
    from runs.tests.fixtures import TaskQueue
    from workspaces.demo import demo_seed

    demo = demo_seed()
    user = get_user_model().objects.get(username=demo.username)
    version = PackVersion.objects.get(workspace=demo.workspace, pack__slug="demo-file-fixes")
    ids = []
    for name in ("Good agent", "Good agent (copy)", "Sloppy agent", "Sloppy agent (copy)"):
        deployment = AgentDeployment.objects.get(workspace=demo.workspace, name=name.replace(" (copy)", ""))
        if name.endswith("(copy)"):
            deployment.pk, deployment.name = None, name
            deployment.save()
        ids.append(deployment.pk)
    captured = TaskQueue()
    queue.capture(captured.items)
    try:
        run = services.run_create(workspace=demo.workspace, user=user, pack_version=version, deployment_ids=ids)
        captured.drain()
    finally:
        queue.capture(None)
    CaseRun.objects.filter(run=run, lane__lane_index=3, case_key="port-typo").update(final_output=LONG)
    return FourLanes(demo=demo, run=run)


@contextmanager
def _fresh_page(page: Any) -> Iterator[Any]:
    context = page.context.browser.new_context(viewport=PHONE)
    try:
        fresh: Any = context.new_page()
        fresh.add_init_script(RECORD_VIOLATIONS)
        fresh.console_errors = []
        fresh.on("console", lambda msg: msg.type == "error" and fresh.console_errors.append(msg.text))
        yield fresh
    finally:
        context.close()


def _box(page: Any, selector: str) -> dict:
    return page.locator(selector).first.bounding_box()


@pytest.mark.parametrize("viewport", [{"width": 1280, "height": 480}, {"width": 390, "height": 480}], ids=["1280", "390"])
def test_the_matrix_fits_or_scrolls_in_its_box_with_sticky_header_and_case_column(four_lanes, live_server, chromium_path, viewport):
    demo, run = four_lanes.demo, four_lanes.run
    with chromium_page(chromium_path, viewport=viewport) as page:
        login(page, live_server.url, demo.username, demo.password)
        page.goto(f"{live_server.url}/w/{demo.workspace.slug}/runs/{run.pk}/")
        wrap = page.locator(".matrix-wrap")
        assert not page_overflows(page)  # the page itself never scrolls sideways
        widths = wrap.evaluate("w => [w.scrollWidth, w.clientWidth]")
        if viewport["width"] == 1280:
            assert widths[0] <= widths[1], widths  # four lanes fit a laptop: no column is cut
            last = _box(page, '.matrix thead th[data-col="3"]')
            frame = wrap.bounding_box()
            assert last["x"] + last["width"] <= frame["x"] + frame["width"] + 1
        else:
            assert widths[0] > widths[1]  # on a phone the matrix scrolls inside its box
            case_before = _box(page, "tbody th.matrix-case")
            wrap.evaluate("w => { w.scrollLeft = w.scrollWidth; }")
            page.wait_for_function("document.querySelector('.matrix-wrap').scrollLeft > 0")
            case_after = _box(page, "tbody th.matrix-case")
            assert abs(case_after["x"] - case_before["x"]) < 1  # the case column stays put
            last = _box(page, '.matrix thead th[data-col="3"]')
            frame = wrap.bounding_box()
            assert last["x"] + last["width"] <= frame["x"] + frame["width"] + 1  # the last lane can be reached
        head_before = _box(page, ".matrix thead th.matrix-case")
        wrap.evaluate("w => { w.scrollTop = 120; }")  # a short window: the matrix box is 78vh high
        page.wait_for_function("document.querySelector('.matrix-wrap').scrollTop > 0")
        assert abs(_box(page, ".matrix thead th.matrix-case")["y"] - head_before["y"]) < 1  # the header stays put
        assert _box(page, "tbody tr")["y"] < head_before["y"]  # while the rows went under it
        assert csp_violations(page) == []


def test_a_cell_expands_to_its_whole_output_and_search_narrows_the_rows(four_lanes, live_server, chromium_path):
    demo, run = four_lanes.demo, four_lanes.run
    with chromium_page(chromium_path, viewport=DESKTOP) as page:
        login(page, live_server.url, demo.username, demo.password)
        page.goto(f"{live_server.url}/w/{demo.workspace.slug}/runs/{run.pk}/")
        row = page.locator('tr[data-case="port-typo"]')
        cell = row.locator('td[data-col="3"]')
        expect(cell.locator(".cell-output")).not_to_contain_text("extra_key_that_failed")
        cell.locator("details.cell-more summary").click()
        expect(cell.locator(".cell-full pre")).to_contain_text('"extra_key_that_failed": true')

        page.fill("#results-q", "extra_key_that")
        page.press("#results-q", "Enter")
        expect(page.locator("tbody tr[data-case]")).to_have_count(1)
        expect(page.locator("tbody tr[data-case]")).to_have_attribute("data-case", "port-typo")
        assert "q=extra_key_that" in page.url
        page.fill("#results-q", "no such words anywhere")
        page.click(".results-filters button[type=submit]")
        expect(page.locator("#run-results-body")).to_contain_text("No case has “no such words anywhere”")
        assert csp_violations(page) == []


def test_lane_columns_hide_and_stay_hidden(four_lanes, live_server, chromium_path):
    demo, run = four_lanes.demo, four_lanes.run
    with chromium_page(chromium_path, viewport=PHONE) as page:
        login(page, live_server.url, demo.username, demo.password)
        url = f"{live_server.url}/w/{demo.workspace.slug}/runs/{run.pk}/"
        page.goto(url)
        page.click("[data-columns-menu] summary")
        page.uncheck('input[data-col-toggle="1"]')
        expect(page.locator('.matrix thead th[data-col="1"]')).to_be_hidden()
        expect(page.locator('.matrix td[data-col="1"]').first).to_be_hidden()
        expect(page.locator('.matrix thead th[data-col="2"]')).to_be_visible()
        assert "show=" not in page.url  # a display choice, not a filter: nothing reloaded
        page.reload()
        expect(page.locator('.matrix thead th[data-col="1"]')).to_be_hidden()
        page.locator('a.cell[data-row="0"][data-col="0"]').focus()
        page.keyboard.press("l")  # the keyboard skips the hidden lane
        assert page.evaluate("document.activeElement.dataset.col") == "2"
        page.click("[data-columns-menu] summary")
        page.check('input[data-col-toggle="1"]')
        expect(page.locator('.matrix thead th[data-col="1"]')).to_be_visible()


def test_the_failing_lanes_bar_is_red(four_lanes, live_server, chromium_path):
    demo, run = four_lanes.demo, four_lanes.run
    with chromium_page(chromium_path, viewport=DESKTOP) as page:
        login(page, live_server.url, demo.username, demo.password)
        page.goto(f"{live_server.url}/w/{demo.workspace.slug}/runs/{run.pk}/")
        sloppy = page.locator('article.lane-card[data-outcome="fail"]').first
        good = page.locator('article.lane-card[data-outcome="pass"]').first
        fill = "(r) => [r.getBBox().width, getComputedStyle(r).fill]"
        bad_width, bad_colour = sloppy.locator("rect.seg-failed").evaluate(fill)
        ok_width, ok_colour = sloppy.locator("rect.seg-ok").evaluate(fill)
        good_width, good_colour = good.locator("rect.seg-ok").evaluate(fill)
        assert (bad_width, ok_width, good_width) == (100, 0, 100)
        assert bad_colour != good_colour == ok_colour
        assert sloppy.evaluate("a => getComputedStyle(a).borderLeftColor") == bad_colour


def test_a_share_link_is_created_copied_opened_and_revoked(four_lanes, live_server, chromium_path):
    demo, run = four_lanes.demo, four_lanes.run
    base = live_server.url
    with chromium_page(chromium_path, viewport=PHONE, permissions=["clipboard-read", "clipboard-write"], base_url=base) as page:
        login(page, base, demo.username, demo.password)
        page.goto(f"{base}/w/{demo.workspace.slug}/runs/{run.pk}/")
        shares = page.locator("#run-shares")
        expect(shares).to_contain_text("No share links yet.")
        page.select_option("#share-days", "30")
        page.click("[data-share-create]")
        link = page.locator("[data-share-url]")
        expect(link).to_be_visible()
        url = link.input_value()
        assert url.startswith(f"{base}/s/")
        page.click("button[data-copy]")
        expect(page.locator("button[data-copy]")).to_have_text("Copied")
        assert page.evaluate("navigator.clipboard.readText()") == url
        expect(shares.locator("#share-list tbody tr")).to_have_count(1)
        assert not page_overflows(page)

        with _fresh_page(page) as stranger:  # another browser context: no session at all
            stranger.goto(url)
            expect(stranger.locator("h1")).to_have_text(run.name)
            expect(stranger.locator("body")).to_contain_text("A read-only copy shared from AgentClash")
            assert not page_overflows(stranger) and csp_violations(stranger) == []
            assert stranger.evaluate("document.styleSheets.length") == 1  # its one inline style applied under the CSP
            assert stranger.evaluate("getComputedStyle(document.body).maxWidth") == "1600px"

        page.on("dialog", lambda dialog: dialog.accept())
        page.click("[data-share-revoke]")
        expect(shares.locator("#share-list")).to_contain_text("Revoked")
        assert RunShare.objects.get().revoked_at is not None
        with _fresh_page(page) as stranger:
            response = stranger.goto(url)
            assert response.status == 404
        assert csp_violations(page) == []


# -- the low layout defects of issue 25 ------------------------------------------------------------


def test_the_run_scorecard_fits_a_laptop_and_the_flash_banner_sits_inside_the_column(four_lanes, live_server, chromium_path):
    demo, run = four_lanes.demo, four_lanes.run
    ws = f"{live_server.url}/w/{demo.workspace.slug}"
    for viewport in (DESKTOP, PHONE):
        with chromium_page(chromium_path, viewport=viewport) as page:
            login(page, live_server.url, demo.username, demo.password)
            page.goto(f"{ws}/runs/{run.pk}/scorecard/")
            table = page.locator("table[data-sortable]").first
            box = table.evaluate("t => [t.parentElement.scrollWidth, t.parentElement.clientWidth]")
            if viewport == DESKTOP:
                assert box[0] <= box[1], box  # four lanes, five dimensions: no column cut at 1280
            assert not page_overflows(page)
            # A flash message on a run page (cancelling a finished run says why) is inset like the content.
            page.goto(f"{ws}/runs/new/")  # a page with a CSRF token; the post lands back on the run page
            with page.expect_navigation():
                page.evaluate(
                    """(url) => { const f = document.createElement('form'); f.method = 'post'; f.action = url;
                    const t = document.createElement('input'); t.type = 'hidden'; t.name = 'csrfmiddlewaretoken';
                    t.value = document.querySelector('[name=csrfmiddlewaretoken]').value; f.appendChild(t);
                    document.body.appendChild(f); f.submit(); }""",
                    f"{ws}/runs/{run.pk}/cancel/",
                )
            message = page.locator(".messages .message").first
            expect(message).to_contain_text("can't be cancelled")
            main = page.locator(".main").bounding_box()
            inset = message.bounding_box()["x"] - main["x"]
            heading = page.locator("#run-status h1").bounding_box()["x"] - main["x"]
            assert inset >= 8 and abs(inset - heading) <= 8, (inset, heading)  # not edge to edge: aligned with the page


def test_library_pack_versions_fit_a_phone_and_chart_series_never_hide_each_other(four_lanes, live_server, chromium_path):
    from pathlib import Path

    from django.conf import settings
    from django.contrib.auth import get_user_model

    from runs.tests.factories import publish

    demo, run = four_lanes.demo, four_lanes.run
    user = get_user_model().objects.get(username=demo.username)
    source = (Path(settings.BASE_DIR) / "packs" / "library" / "document-extraction.yaml").read_text()
    version = publish(demo.workspace, user, source)  # its warnings name long YAML paths
    ws = f"{live_server.url}/w/{demo.workspace.slug}"
    with chromium_page(chromium_path, viewport=PHONE) as page:
        login(page, live_server.url, demo.username, demo.password)
        page.goto(f"{ws}/packs/versions/{version.pk}/")
        expect(page.locator(".warnings-list code").first).to_be_visible()
        assert not page_overflows(page), page.evaluate("document.documentElement.scrollWidth")
    with chromium_page(chromium_path, viewport=DESKTOP) as page:
        login(page, live_server.url, demo.username, demo.password)
        page.goto(f"{ws}/packs/{run.pack_version.pack_id}/results/")
        dots = page.locator("#chart-pass_rate circle.dot").evaluate_all("cs => cs.map(c => [c.cx.baseVal.value, c.cy.baseVal.value])")
        assert len(dots) == 4  # one run, four agents; two pairs share their value
        assert len({tuple(d) for d in dots}) == 4  # yet no dot sits on another

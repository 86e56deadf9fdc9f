"""The reviewer's pages in a real browser (issue 11): the New run form keeps what was chosen,
the runs list searches and sorts, a comparison shows diverging cases side by side, the pack page
charts results per agent, scorecard headers sort from the keyboard, search finds things."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from playwright.sync_api import expect

from comparisons.models import Comparison
from core.tests.browser import chromium_page, csp_violations, login, page_overflows
from infrastructure.models import AgentDeployment
from packs.models import PackVersion
from runs import queue, services
from runs.models import Run
from runs.tests.fixtures import TaskQueue
from workspaces.demo import demo_seed

pytestmark = [pytest.mark.browser, pytest.mark.services, pytest.mark.slow, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def demo(live_server):
    return demo_seed()


@pytest.fixture
def two_runs(demo):
    """Two finished runs of the demo file-fixes pack, executed in-process: a race and a solo."""
    user = get_user_model().objects.get(username=demo.username)
    version = PackVersion.objects.get(workspace=demo.workspace, pack__slug="demo-file-fixes")
    good = AgentDeployment.objects.get(workspace=demo.workspace, name="Good agent")
    sloppy = AgentDeployment.objects.get(workspace=demo.workspace, name="Sloppy agent")
    captured = TaskQueue()
    queue.capture(captured.items)
    try:
        race = services.run_create(
            workspace=demo.workspace, user=user, pack_version=version, deployment_ids=[good.pk, sloppy.pk], name="Alpha race"
        )
        captured.drain()
        solo = services.run_create(workspace=demo.workspace, user=user, pack_version=version, deployment_ids=[sloppy.pk])
        captured.drain()
    finally:
        queue.capture(None)
    return race, solo


def test_the_new_run_form_keeps_a_typed_name_and_both_ticks_and_starts_two_lanes(live_server, chromium_path, demo):
    version = PackVersion.objects.get(workspace=demo.workspace, pack__slug="demo-file-fixes")
    base, ws = live_server.url, f"{live_server.url}/w/{demo.workspace.slug}"
    with chromium_page(chromium_path) as page:
        login(page, base, demo.username, demo.password)
        page.goto(f"{ws}/runs/new/")
        preview = page.locator("#run-preview")
        page.select_option("#id_pack_version_id", str(version.pk))
        preview.filter(has_text="0 agents × 3 cases").wait_for()

        # The native pack offers only the agents whose runtime profile runs native packs.
        agents = page.locator("#run-create-fields fieldset")
        assert agents.get_by_label("Good agent (prompt eval)", exact=True).count() == 0
        assert "Good agent (prompt eval)" in page.inner_text("#run-unfit-agents")

        # Type a name, then tick two agents quickly: nothing typed or ticked is lost.
        page.fill("#id_name", "Typed before ticking")
        agents.get_by_label("Good agent", exact=True).check()
        agents.get_by_label("Sloppy agent", exact=True).check()
        preview.filter(has_text="2 agents × 3 cases = 6 case runs").wait_for()
        page.wait_for_timeout(600)  # a late response would land by now
        assert page.input_value("#id_name") == "Typed before ticking"
        assert agents.get_by_label("Good agent", exact=True).is_checked()
        assert agents.get_by_label("Sloppy agent", exact=True).is_checked()

        page.click("#run-create-form button[type=submit]")
        page.wait_for_url(f"{ws}/runs/*/")
        run = Run.objects.get(workspace=demo.workspace)
        assert run.name == "Typed before ticking"
        assert sorted(run.lanes.values_list("label", flat=True)) == ["Good agent", "Sloppy agent"]
        assert csp_violations(page) == []


def test_the_runs_list_searches_and_sorts_by_score_from_the_keyboard(live_server, chromium_path, demo, two_runs):
    race, solo = two_runs
    base, ws = live_server.url, f"{live_server.url}/w/{demo.workspace.slug}"
    with chromium_page(chromium_path) as page:
        login(page, base, demo.username, demo.password)
        page.goto(f"{ws}/runs/")
        rows = page.locator("#runs-table tbody tr")
        assert rows.count() == 2
        race_row = page.locator(f"#runs-table tr[data-run-id='{race.pk}']")
        assert "Good agent" in race_row.locator("td").nth(2).inner_text()  # winner
        assert "1.000" in race_row.inner_text() and "50%" in race_row.inner_text()

        # Typing filters the table (htmx, no submit); the URL keeps the search.
        page.fill("#run-search", "alpha")
        expect(rows).to_have_count(1)
        assert "Alpha race" in page.inner_text("#runs-table tbody")
        assert "q=alpha" in page.url
        page.fill("#run-search", "")
        expect(rows).to_have_count(2)

        # Sort headers are links: reach one with the keyboard and press Enter.
        header = page.locator("#runs-table th a.th-sort", has_text="Best score")
        header.focus()
        page.keyboard.press("Enter")
        sorted_header = page.locator("#runs-table th[aria-sort]")
        expect(sorted_header).to_have_text("Best score")
        expect(sorted_header).to_have_attribute("aria-sort", "descending")
        assert rows.first.get_attribute("data-run-id") == str(race.pk)
        page.locator("#runs-table th a.th-sort", has_text="Best score").click()  # again: ascending
        expect(sorted_header).to_have_attribute("aria-sort", "ascending")
        assert rows.first.get_attribute("data-run-id") == str(solo.pk)
        assert "sort=best_score" in page.url

        # A status filter keeps the sort.
        page.select_option("#run-filters select[name=status]", "completed")
        page.wait_for_url("**status=completed**")
        assert "sort=best_score" in page.url
        assert rows.first.get_attribute("data-run-id") == str(solo.pk)
        assert csp_violations(page) == []


def test_a_comparison_is_titled_by_its_agents_and_shows_each_diverging_case(live_server, chromium_path, demo, two_runs):
    race, _ = two_runs
    good_lane, sloppy_lane = race.lanes.order_by("lane_index")
    base, ws = live_server.url, f"{live_server.url}/w/{demo.workspace.slug}"
    with chromium_page(chromium_path) as page:
        login(page, base, demo.username, demo.password)
        page.goto(f"{ws}/comparisons/")
        page.select_option("#id_baseline_run_id", str(race.pk))
        page.locator("#id_baseline_lane_id option", has_text="Good agent").wait_for(state="attached")
        page.select_option("#id_baseline_lane_id", str(good_lane.pk))
        page.select_option("#id_candidate_run_id", str(race.pk))
        page.locator("#id_candidate_lane_id option", has_text="Sloppy agent").wait_for(state="attached")
        page.select_option("#id_candidate_lane_id", str(sloppy_lane.pk))
        page.get_by_role("button", name="Compare").click()
        page.wait_for_url(f"{ws}/comparisons/*/")
        comparison = Comparison.objects.get(workspace=demo.workspace)

        assert page.inner_text("h1") == "Sloppy agent vs Good agent"
        assert page.title().startswith("Sloppy agent vs Good agent")
        diffs = page.locator("details.case-diff")
        assert diffs.count() == len(comparison.summary["case_divergence"]["passed_to_failed"]) == 3
        first = diffs.first
        assert first.locator(".diff-table th").nth(0).inner_text() == "Baseline · Good agent"
        assert first.locator(".diff-table .ln-del").count() >= 1 and first.locator(".diff-table .ln-add").count() >= 1
        changed = first.locator(".validator-changes tbody tr")
        assert changed.count() >= 1
        assert changed.first.locator("td").nth(1).inner_text().split() == ["pass", "→", "fail", "worse"]

        # The list names it the same way and links to it.
        page.goto(f"{ws}/comparisons/")
        page.get_by_role("link", name="Sloppy agent vs Good agent").click()
        page.wait_for_url(f"{ws}/comparisons/{comparison.pk}/")
        assert csp_violations(page) == []


def test_the_pack_page_charts_pass_rate_and_score_per_agent(live_server, chromium_path, demo, two_runs):
    race, solo = two_runs
    pack = race.pack_version.pack
    base, ws = live_server.url, f"{live_server.url}/w/{demo.workspace.slug}"
    with chromium_page(chromium_path) as page:
        login(page, base, demo.username, demo.password)
        page.goto(f"{ws}/packs/{pack.pk}/")
        chart = page.locator("#pack-results #chart-pass_rate svg")
        chart.wait_for()  # loaded by htmx from the runs app
        # Good agent raced once, Sloppy agent twice: three points per chart, a line for Sloppy.
        assert chart.locator("circle").count() == 3
        assert chart.locator("polyline").count() == 1
        assert page.locator("#pack-results #chart-overall_score svg circle").count() == 3
        legend = page.inner_text("#pack-results .legend")
        assert "Good agent" in legend and "Sloppy agent" in legend
        titles = chart.locator("circle title").all_text_contents()
        assert f"Good agent — run #{race.pk} (v1): pass rate 100% (1 trial: no uncertainty estimate)" in titles
        assert not page.locator("#pack-results style, #pack-results [style]").count()
        assert csp_violations(page) == []


def test_scorecard_headers_sort_from_the_keyboard_and_the_sidebar_says_runs(live_server, chromium_path, demo, two_runs):
    race, _ = two_runs
    base, ws = live_server.url, f"{live_server.url}/w/{demo.workspace.slug}"
    with chromium_page(chromium_path) as page:
        login(page, base, demo.username, demo.password)
        page.goto(f"{ws}/runs/{race.pk}/scorecard/")
        assert page.locator(".sidebar [aria-current=page]").inner_text() == "Runs"

        # Tab from the page's start reaches the sort buttons; Enter sorts.
        page.locator("body").focus()
        reached = None
        for _ in range(80):
            page.keyboard.press("Tab")
            text = page.evaluate("document.activeElement.matches('th .th-sort') ? document.activeElement.textContent : ''")
            if text == "Overall":
                reached = text
                break
        assert reached == "Overall"
        page.keyboard.press("Enter")
        header = page.locator("th", has=page.locator(".th-sort", has_text="Overall"))
        assert header.get_attribute("aria-sort") == "ascending"
        first = page.locator("#run-scorecard tbody tr").first.inner_text()
        assert "Sloppy agent" in first
        page.keyboard.press(" ")
        assert header.get_attribute("aria-sort") == "descending"
        assert "Good agent" in page.locator("#run-scorecard tbody tr").first.inner_text()

        # A lane scorecard highlights Runs too; comparisons highlight Compare.
        lane = race.lanes.first()
        page.goto(f"{ws}/runs/{race.pk}/lanes/{lane.pk}/scorecard/")
        assert page.locator(".sidebar [aria-current=page]").inner_text() == "Runs"
        page.goto(f"{ws}/comparisons/")
        assert page.locator(".sidebar [aria-current=page]").inner_text() == "Compare"


def test_search_finds_runs_packs_and_deployments_from_the_top_bar(live_server, chromium_path, demo, two_runs):
    race, _ = two_runs
    base, ws = live_server.url, f"{live_server.url}/w/{demo.workspace.slug}"
    with chromium_page(chromium_path) as page:
        login(page, base, demo.username, demo.password)
        page.fill("#site-search", "sloppy")
        page.press("#site-search", "Enter")
        page.wait_for_url(f"{ws}/search/?q=sloppy")
        assert page.locator("#search-runs li").count() == 2  # both runs raced the sloppy agent
        assert page.locator("#search-deployments li").count() == 2  # native and prompt-eval sloppy agents
        page.fill("#search-page-q", "file fixes")
        page.press("#search-page-q", "Enter")
        page.wait_for_url(f"{ws}/search/?q=file+fixes")
        assert "Demo: file fixes" in page.inner_text("#search-packs") or page.locator("#search-packs li").count() == 1
        page.locator("#search-packs li a").first.click()
        page.wait_for_url(f"{ws}/packs/*/")
        page.fill("#site-search", f"#{race.pk}")
        page.press("#site-search", "Enter")
        page.locator("#search-runs li", has_text="Alpha race").wait_for()
        assert not page_overflows(page)
        assert csp_violations(page) == []

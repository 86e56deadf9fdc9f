"""In a real browser: every page runs under the strict Content-Security-Policy without a violation.

Visits the pages reachable from the demo workspace (plus a finished run, its scorecards and a
replay, the API docs and the Django admin), presses the buttons whose behaviour moved out of
inline handlers into static/js/app.js, and fails on any CSP report in the console.
"""

from __future__ import annotations

from urllib.parse import urljoin, urlparse

import pytest
from django.contrib.auth import get_user_model

from core.tests.browser import chromium_page, csp_violations
from runs import queue, services
from runs.tests.factories import make_deployment, native_pack_yaml, publish
from runs.tests.fixtures import TaskQueue
from workspaces.demo import demo_seed
from workspaces.models import Role, WorkspaceMembership
from workspaces.tests.factories import PASSWORD, add_member, make_user

pytestmark = [pytest.mark.browser, pytest.mark.services, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

MAX_PAGES = 80


@pytest.fixture
def browser_page(chromium_path, live_server):
    with chromium_page(chromium_path) as page:
        yield page


@pytest.fixture
def finished_run():
    """The demo workspace with one finished run, executed in-process (no worker needed)."""
    demo = demo_seed()
    user = get_user_model().objects.get(username=demo.username)
    version = publish(demo.workspace, user, native_pack_yaml(cases=2))
    deployment = make_deployment(demo.workspace, name="csp-reader")
    captured = TaskQueue()
    queue.capture(captured.items)
    try:
        run = services.run_create(workspace=demo.workspace, user=user, pack_version=version, deployment_ids=[deployment.pk])
        captured.drain()
    finally:
        queue.capture(None)
    return demo, run


def _login(page, base: str, path: str, username: str, password: str) -> None:
    page.goto(f"{base}{path}")
    page.fill("#id_username", username)
    page.fill("#id_password", password)
    page.click("[type=submit]")
    page.wait_for_load_state("load")


def _crawl(page, base: str, start: list[str]) -> list[str]:
    """Visit pages reachable from ``start`` (same origin, GET links only); return them."""
    seen: list[str] = []
    todo = list(start)
    skip = ("/accounts/logout", "/yaml/", "/admin/", "/events.jsonl", "/export")
    while todo and len(seen) < MAX_PAGES:
        url = todo.pop(0)
        if url in seen:
            continue
        seen.append(url)
        response = page.goto(url)
        assert response is not None and response.status < 500, url
        page.wait_for_load_state("load")
        for href in page.eval_on_selector_all("a[href]:not([download])", "els => els.map(e => e.getAttribute('href'))"):
            target = urljoin(url, href).split("#")[0]
            parsed = urlparse(target)
            is_file = "." in parsed.path.rsplit("/", 1)[-1]  # scorecard.json, events.jsonl, …: downloads
            if (
                target.startswith(base)
                and parsed.path.startswith(("/w/", "/settings/"))
                and not is_file
                and not any(s in target for s in skip)
            ):
                if target not in seen and target not in todo:
                    todo.append(target)
    return seen


def test_every_page_runs_under_the_strict_policy_without_a_violation(live_server, browser_page, finished_run):
    page, base = browser_page, live_server.url
    demo, run = finished_run
    ws = f"{base}/w/{demo.workspace.slug}"

    page.goto(f"{base}/accounts/login/")
    assert "default-src 'self'" in (page.context.request.get(f"{base}/accounts/login/").headers.get("content-security-policy") or "")
    _login(page, base, "/accounts/login/", demo.username, demo.password)
    assert page.url.startswith(f"{ws}/")

    case_run = run.case_runs.first()
    start = [f"{ws}/", f"{ws}/runs/{run.pk}/", f"{ws}/runs/{run.pk}/cases/{case_run.pk}/", f"{base}/settings/api-tokens/"]
    visited = _crawl(page, base, start)
    assert len(visited) >= 15, visited
    assert any("/scorecard" in url for url in visited), visited

    # Swagger UI renders with its script served as a file.
    page.goto(f"{base}/api/docs/")
    page.locator(".swagger-ui .info").wait_for()

    assert csp_violations(page) == []


def test_confirm_prompts_and_dialogs_work_without_inline_handlers(live_server, browser_page):
    page, base = browser_page, live_server.url
    demo = demo_seed()
    ws = f"{base}/w/{demo.workspace.slug}"
    _login(page, base, "/accounts/login/", demo.username, demo.password)

    # An edit dialog fetched with hx-get opens itself (data-autoopen, static/js/app.js).
    page.goto(f"{ws}/deployments/")
    page.locator("table a", has_text="Edit").first.click()
    page.locator("#dialog-slot dialog[open]").wait_for()

    # "Leave workspace" asks first (data-confirm); dismissing keeps the membership.
    bob = make_user("bob-leaver")
    add_member(demo.workspace, bob, Role.MEMBER)
    page.goto(f"{ws}/members/")
    page.once("dialog", lambda dialog: dialog.dismiss())
    page.click("#leave-workspace")
    page.wait_for_timeout(300)
    assert page.url == f"{ws}/members/"
    demo_user = get_user_model().objects.get(username=demo.username)
    assert WorkspaceMembership.objects.filter(workspace=demo.workspace, user=demo_user).exists()

    # The last admin is told they cannot leave, after accepting the prompt.
    page.once("dialog", lambda dialog: dialog.accept())
    page.click("#leave-workspace")
    page.locator(".message-error", has_text="last admin").wait_for()

    # Removing a member asks, and accepting removes them.
    page.once("dialog", lambda dialog: dialog.accept())
    page.locator("tr", has_text="bob-leaver").get_by_role("button", name="Remove").click()
    page.locator(".message", has_text="Removed bob-leaver").wait_for()
    assert not WorkspaceMembership.objects.filter(workspace=demo.workspace, user=bob).exists()

    # bob's own "Leave workspace" button works for a plain member.
    add_member(demo.workspace, bob, Role.MEMBER)
    page.goto(f"{base}/accounts/login/")
    page.context.clear_cookies()
    _login(page, base, "/accounts/login/", "bob-leaver", PASSWORD)
    page.goto(f"{ws}/members/")
    page.once("dialog", lambda dialog: dialog.accept())
    page.click("#leave-workspace")
    page.locator(".message", has_text="You left").wait_for()
    assert not WorkspaceMembership.objects.filter(workspace=demo.workspace, user=bob).exists()

    assert csp_violations(page) == []


def test_the_django_admin_runs_under_the_policy(live_server, browser_page):
    page, base = browser_page, live_server.url
    get_user_model().objects.create_superuser("root", "", PASSWORD)
    _login(page, base, "/admin/login/?next=/admin/", "root", PASSWORD)
    page.locator("#site-name").wait_for()
    for path in ["/admin/", "/admin/workspaces/workspace/", "/admin/auth/user/add/"]:
        page.goto(f"{base}{path}")
        page.wait_for_load_state("load")
    assert csp_violations(page) == []

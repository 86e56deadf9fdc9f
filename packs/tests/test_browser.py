"""The editor in a real browser: paste a broken pack, jump to the error line, fix, publish."""

from __future__ import annotations

import pytest

from core.tests.browser import login
from packs.models import PackVersion
from packs.tests.factories import bundle_yaml, warned_bundle_yaml
from workspaces.tests.factories import PASSWORD

pytestmark = [pytest.mark.browser, pytest.mark.services]


def test_a_member_fixes_a_broken_pack_from_the_inline_error_and_publishes_it(live_server, page, member):
    login(page, live_server.url, member.username, PASSWORD)

    page.goto(f"{live_server.url}/w/acme/packs/new/")
    broken = bundle_yaml().replace("difficulty: easy", "difficulty: trivial")
    bad_line = broken.splitlines().index("    difficulty: trivial") + 1
    page.fill("#id_yaml", broken)
    assert page.is_disabled("#publish-button")

    page.click("button[value=validate]")
    link = page.locator(f".errors-list a[data-line='{bad_line}']")
    link.wait_for()
    assert f"line {bad_line}" in link.inner_text()
    assert "challenges[0].difficulty" in page.inner_text(".errors-list")
    assert page.is_disabled("#publish-button")
    assert page.locator(".gutter .gutter-error").inner_text() == str(bad_line)

    link.click()
    selected = page.evaluate(
        "() => { const t = document.getElementById('id_yaml'); return t.value.slice(t.selectionStart, t.selectionEnd); }"
    )
    assert selected == "    difficulty: trivial"
    assert page.evaluate("() => document.activeElement.id") == "id_yaml"

    # Fix the selected line by typing over the selection, as an author would.
    page.keyboard.type("    difficulty: easy")
    assert page.input_value("#id_yaml") == bundle_yaml()
    page.click("button[value=validate]")
    page.locator("text=Ready to publish").wait_for()
    assert page.is_enabled("#publish-button")

    page.click("#publish-button")
    page.wait_for_url(f"{live_server.url}/w/acme/packs/versions/*/")
    version = PackVersion.objects.get()
    assert page.url == f"{live_server.url}/w/acme/packs/versions/{version.pk}/"
    assert "Tiny pack" in page.inner_text("h1")
    assert "Published Tiny pack version 1" in page.inner_text(".messages")


def test_a_member_jumps_to_a_warning_line_and_publishes_despite_the_warnings(live_server, page, member):
    login(page, live_server.url, member.username, PASSWORD)

    page.goto(f"{live_server.url}/w/acme/packs/new/")
    page.fill("#id_yaml", warned_bundle_yaml())
    page.click("button[value=validate]")
    link = page.locator(".warnings-list a[data-line='9']")
    link.wait_for()
    assert "2 warnings" in page.inner_text("#editor-warnings h2")
    assert "version.tools is read as the pack's tools" in page.inner_text(".warnings-list")
    assert page.is_enabled("#publish-button")
    assert page.locator(".gutter .gutter-warning").all_inner_texts() == ["9", "12"]

    link.click()
    selected = page.evaluate(
        "() => { const t = document.getElementById('id_yaml'); return t.value.slice(t.selectionStart, t.selectionEnd); }"
    )
    assert selected == "  tools:"

    page.click("#publish-button")
    page.wait_for_url(f"{live_server.url}/w/acme/packs/versions/*/")
    assert "with 2 warnings" in page.inner_text(".messages")
    assert 'mock tool "ping" has no response' in page.inner_text("#warnings")

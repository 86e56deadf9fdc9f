"""The artifacts page in a real browser: upload a file, see it listed, download it."""

from __future__ import annotations

import os

import pytest

from artifacts.models import Artifact
from artifacts.tests.factories import PNG
from workspaces.tests.factories import PASSWORD

pytestmark = [pytest.mark.browser, pytest.mark.services, pytest.mark.django_db(transaction=True)]

CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--no-first-run"]


@pytest.fixture
def page(chromium_path):
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"  # Playwright's sync API runs an event loop in this thread
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium_path, args=CHROMIUM_ARGS)
        try:
            yield browser.new_page(viewport={"width": 1280, "height": 900}, accept_downloads=True)
        finally:
            browser.close()


def test_a_member_uploads_a_file_and_downloads_it_again(live_server, page, member, workspace, tmp_path):
    page.goto(f"{live_server.url}/accounts/login/")
    page.fill("input[name=username]", member.username)
    page.fill("input[name=password]", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(f"{live_server.url}/w/**")
    page.goto(f"{live_server.url}/w/acme/artifacts/")
    assert "No artifacts yet." in page.content()

    chart = tmp_path / "chart.png"
    chart.write_bytes(PNG)
    page.set_input_files("#artifact-upload input[type=file]", str(chart))
    page.click("#artifact-upload button[type=submit]")
    page.wait_for_selector("#artifact-table")
    assert "Uploaded chart.png (image/png)." in page.content()
    artifact = Artifact.objects.get(workspace=workspace)

    with page.expect_download() as info:
        page.click(f"tr[data-artifact='{artifact.pk}'] a")
    download = info.value
    assert download.suggested_filename == "chart.png"
    assert open(download.path(), "rb").read() == PNG

    page.set_input_files("#artifact-upload input[type=file]", {"name": "page.html", "mimeType": "text/plain", "buffer": b"<p>hi</p>"})
    page.click("#artifact-upload button[type=submit]")
    page.wait_for_selector(".field.has-error")
    assert "Not stored: .html files are not accepted" in page.content()
    assert Artifact.objects.count() == 1

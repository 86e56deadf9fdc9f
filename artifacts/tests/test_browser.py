"""The artifacts page in a real browser: upload a file, see it listed, download it."""

from __future__ import annotations

import pytest

from artifacts.models import Artifact
from artifacts.tests.factories import PNG
from core.tests.browser import login
from workspaces.tests.factories import PASSWORD

pytestmark = [pytest.mark.browser, pytest.mark.services, pytest.mark.django_db(transaction=True)]


def test_a_member_uploads_a_file_and_downloads_it_again(live_server, page, member, workspace, tmp_path):
    login(page, live_server.url, member.username, PASSWORD)
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

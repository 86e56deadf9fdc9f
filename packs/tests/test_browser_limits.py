"""The pack editor in a real browser: a paste over the 1 MiB limit is explained, not ignored."""

from __future__ import annotations

from typing import Any

import pytest

from core.tests.browser import chromium_page, csp_violations, login
from packs.models import PackVersion
from workspaces.tests.factories import PASSWORD

pytestmark = [pytest.mark.browser, pytest.mark.services, pytest.mark.django_db(transaction=True)]

FILL = """(size) => {
  const t = document.getElementById('id_yaml');
  t.value = 'x: ' + 'y'.repeat(size);
  t.dispatchEvent(new Event('input', {bubbles: true}));
}"""


@pytest.mark.parametrize("size", [3 * 1024 * 1024, 1024 * 1024 + 10])
def test_validate_says_a_bundle_may_be_at_most_1_mib(live_server, chromium_path, member, size):
    """3 MiB is over the request size limit (the server refuses it before the form); 1 MiB + 10 is not."""
    base = live_server.url
    with chromium_page(chromium_path) as page:
        login(page, base, member.username, PASSWORD)
        page.goto(f"{base}/w/acme/packs/new/")
        posts: list[str] = []

        def record(request: Any) -> None:
            if request.method == "POST":
                posts.append(request.url)

        page.on("request", record)
        page.evaluate(FILL, size)
        page.get_by_role("button", name="Validate").click()
        problem = page.locator("#editor-result .errors-list li")
        problem.wait_for()
        assert "A bundle may be at most 1 MiB." in problem.inner_text()
        # in bytes, so 1 MiB + 10 does not read "This one is 1.0 MiB" (issue 25)
        assert f"This one is {size + 3:,} bytes, {size + 3 - 1024 * 1024:,} too many." in problem.inner_text()  # "x: " + size
        assert page.is_disabled("#publish-button")
        assert posts == []  # said at once, without sending megabytes the server would refuse
        assert not PackVersion.objects.exists()
        assert csp_violations(page) == []

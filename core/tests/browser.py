"""Headless Debian Chromium for browser tests: a page per test, login, CSP violation records.

Playwright's sync API runs an event loop in the test's thread, hence DJANGO_ALLOW_ASYNC_UNSAFE.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from playwright.sync_api import ViewportSize

CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
]
TIMEOUT_MS = 30_000
PHONE: ViewportSize = {"width": 390, "height": 844}
DESKTOP: ViewportSize = {"width": 1280, "height": 900}

# Record violations in every document, in addition to the console messages.
RECORD_VIOLATIONS = """
document.addEventListener('securitypolicyviolation', (e) => {
  const seen = JSON.parse(sessionStorage.getItem('csp') || '[]');
  seen.push(e.violatedDirective + ' ' + (e.blockedURI || 'inline') + ' at ' + e.documentURI);
  sessionStorage.setItem('csp', JSON.stringify(seen));
});
"""


@contextmanager
def chromium_page(
    chromium_path: str,
    *,
    viewport: ViewportSize | None = None,
    color_scheme: Literal["light", "dark", "no-preference"] = "light",
    permissions: list[str] | None = None,
    base_url: str | None = None,
    timeout_ms: int = TIMEOUT_MS,
) -> Iterator[Any]:
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium_path, args=CHROMIUM_ARGS)
        try:
            context = browser.new_context(viewport=viewport or DESKTOP, color_scheme=color_scheme)
            if permissions:
                context.grant_permissions(permissions, origin=base_url)
            page: Any = context.new_page()  # Any: it carries console_errors too
            page.set_default_timeout(timeout_ms)
            page.add_init_script(RECORD_VIOLATIONS)
            page.console_errors = []
            page.on("console", lambda msg: msg.type == "error" and page.console_errors.append(msg.text))
            yield page
        finally:
            browser.close()


def login(page: Any, base: str, username: str, password: str) -> None:
    page.goto(f"{base}/accounts/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", password)
    page.click("button[type=submit]")
    page.wait_for_url(f"{base}/w/**")


def csp_violations(page: Any) -> list[str]:
    console = [t for t in page.console_errors if "Content Security Policy" in t or "Content-Security-Policy" in t]
    return console + page.evaluate("JSON.parse(sessionStorage.getItem('csp') || '[]')")


def page_overflows(page: Any) -> bool:
    """True when the document is wider than the window (something pushes the page sideways)."""
    return bool(page.evaluate("document.documentElement.scrollWidth > window.innerWidth + 1"))

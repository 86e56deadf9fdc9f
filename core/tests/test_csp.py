"""A strict Content-Security-Policy on every page; no template carries inline script or style."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.conf import settings
from django.urls import reverse

pytestmark = pytest.mark.django_db

ROOT = Path(settings.BASE_DIR)
TEMPLATE_DIRS = [ROOT / "templates", *sorted(ROOT.glob("*/templates"))]
INLINE_SCRIPT = re.compile(r"<script(?![^>]*\bsrc=)[^>]*>", re.IGNORECASE)
INLINE_STYLE = re.compile(r"<style\b|\sstyle\s*=", re.IGNORECASE)
INLINE_HANDLER = re.compile(r"\son[a-z]+\s*=", re.IGNORECASE)


def _directives(header: str) -> dict[str, list[str]]:
    parsed = {}
    for part in header.split(";"):
        words = part.split()
        if words:
            parsed[words[0]] = words[1:]
    return parsed


def test_pages_send_a_strict_policy(client_for, admin, workspace):
    response = client_for(admin).get(reverse("workspaces:dashboard", args=[workspace.slug]))
    policy = _directives(response["Content-Security-Policy"])
    assert policy["default-src"] == ["'self'"]
    assert policy["script-src"] == ["'self'"]
    assert policy["style-src"] == ["'self'"]
    assert policy["frame-ancestors"] == ["'none'"]
    assert policy["form-action"] == ["'self'"]
    assert policy["object-src"] == ["'none'"]
    assert "'unsafe-inline'" not in response["Content-Security-Policy"]
    assert "'unsafe-eval'" not in response["Content-Security-Policy"]


def test_the_login_page_and_the_api_send_it_too(client):
    assert "frame-ancestors 'none'" in client.get("/accounts/login/")["Content-Security-Policy"]
    assert "default-src 'self'" in client.get("/api/v1/me")["Content-Security-Policy"]


def test_htmx_is_told_not_to_inject_its_indicator_style(client):
    content = client.get("/accounts/login/").content.decode()
    assert """<meta name="htmx-config" content='{"includeIndicatorStyles":false}'>""" in content
    assert ".htmx-indicator" in (ROOT / "static/css/app.css").read_text()


def test_the_api_docs_load_their_script_from_a_file_with_only_images_relaxed(client_for, admin):
    client = client_for(admin)
    page = client.get("/api/docs/")
    assert page.status_code == 200
    policy = _directives(page["Content-Security-Policy"])
    assert policy["script-src"] == ["'self'"]
    assert policy["style-src"] == ["'self'"]
    assert policy["img-src"] == ["'self'", "data:"]
    html = page.content.decode()
    assert not INLINE_SCRIPT.search(html) and not INLINE_STYLE.search(html)
    script = re.search(r'<script src="(/api/docs/\?[^"]*script=[^"]*)"', html)
    assert script, html
    init = client.get(script.group(1).replace("&amp;", "&"))
    assert init.status_code == 200
    assert init["Content-Type"].startswith("application/javascript")
    assert b"SwaggerUIBundle" in init.content


def _template_files() -> list[Path]:
    return [path for folder in TEMPLATE_DIRS for path in folder.rglob("*.html")]


def test_no_template_has_an_inline_script_style_or_handler():
    offenders = []
    for path in _template_files():
        text = re.sub(r"{#.*?#}", "", path.read_text(), flags=re.DOTALL)
        for name, pattern in (("inline <script>", INLINE_SCRIPT), ("style", INLINE_STYLE), ("on…= handler", INLINE_HANDLER)):
            for match in pattern.finditer(text):
                line = text.count("\n", 0, match.start()) + 1
                offenders.append(f"{path.relative_to(ROOT)}:{line}: {name}")
    assert not offenders, "Move these into static/js or static/css (docs/style.md §16):\n" + "\n".join(offenders)
    assert len(_template_files()) > 20  # the scan found the templates

"""The OpenAPI schema is generated from the views and must be valid (docs/style.md §18)."""

from __future__ import annotations

from django.core.management import call_command


def test_the_openapi_schema_generates_without_warnings_and_validates(tmp_path):
    out = tmp_path / "schema.yaml"
    call_command("spectacular", "--validate", "--fail-on-warn", "--file", str(out))
    text = out.read_text()
    assert "openapi: 3" in text
    assert "/api/v1/me" in text and "/api/v1/primitives" in text

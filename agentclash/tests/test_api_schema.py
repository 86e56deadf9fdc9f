"""The OpenAPI schema is generated from the views and must be valid (docs/style.md §18)."""

from __future__ import annotations

import pytest
from django.core.management import call_command
from drf_spectacular.generators import SchemaGenerator


def test_the_openapi_schema_generates_without_warnings_and_validates(tmp_path):
    out = tmp_path / "schema.yaml"
    call_command("spectacular", "--validate", "--fail-on-warn", "--file", str(out))
    text = out.read_text()
    assert "openapi: 3" in text
    assert "/api/v1/me" in text and "/api/v1/primitives" in text


@pytest.mark.django_db
def test_the_api_docs_are_grouped_by_subject_and_lead_back_to_the_app(client, django_user_model):
    """Issue 25: one flat "v1" group, and no way back from the docs to the app."""
    schema = SchemaGenerator().get_schema(request=None, public=True)
    tags = {tag for operations in schema["paths"].values() for operation in operations.values() for tag in operation.get("tags", [])}
    assert {"runs", "packs", "secrets", "regression-suites", "comparisons"} <= tags and "v1" not in tags
    user = django_user_model.objects.create_user("docs-reader", password="x-password-123")
    client.force_login(user)
    page = client.get("/api/docs/").content.decode()
    assert 'href="/">← Back to AgentClash</a>' in page

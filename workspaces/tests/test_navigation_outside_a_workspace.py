"""The pages outside any workspace (API tokens, API docs) keep the navigation of the workspace last
opened (issue 25: the API tokens page had no workspace navigation)."""

from __future__ import annotations

import pytest

from workspaces.models import WorkspaceMembership

pytestmark = pytest.mark.django_db

TOKENS = "/settings/api-tokens/"


def test_the_api_tokens_page_shows_the_last_workspaces_menu(workspace, member, client_for):
    client = client_for(member)
    assert 'href="/w/acme/runs/"' not in client.get(TOKENS).content.decode()  # no workspace opened yet
    client.get("/w/acme/runs/")
    body = client.get(TOKENS).content.decode()
    assert 'href="/w/acme/runs/"' in body and 'href="/w/acme/packs/"' in body and "API tokens" in body


def test_a_workspace_left_since_is_not_shown(workspace, member, client_for):
    client = client_for(member)
    client.get("/w/acme/runs/")
    WorkspaceMembership.objects.filter(user=member, workspace=workspace).delete()
    assert 'href="/w/acme/runs/"' not in client.get(TOKENS).content.decode()

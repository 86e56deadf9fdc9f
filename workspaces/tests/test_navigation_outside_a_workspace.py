"""The pages outside any workspace (API tokens, API docs) keep a workspace's navigation (issue 25:
the API tokens page had none): the one the user came from, else their first."""

from __future__ import annotations

import pytest

from workspaces.models import Workspace, WorkspaceMembership

pytestmark = pytest.mark.django_db

TOKENS = "/settings/api-tokens/"


def test_the_api_tokens_page_shows_the_menu_of_the_workspace_the_user_came_from(workspace, member, client_for):
    other = Workspace.objects.create(name="Zeta", slug="zeta")
    WorkspaceMembership.objects.create(workspace=other, user=member, role="viewer")
    client = client_for(member)
    first = client.get(TOKENS).content.decode()
    assert 'href="/w/acme/runs/"' in first  # their first workspace, by name
    came = client.get(TOKENS, HTTP_REFERER="http://testserver/w/zeta/runs/").content.decode()
    assert 'href="/w/zeta/runs/"' in came and 'href="/w/zeta/packs/"' in came


def test_a_workspace_the_user_is_not_a_member_of_is_never_shown(workspace, member, client_for):
    WorkspaceMembership.objects.filter(user=member).delete()
    Workspace.objects.create(name="Zeta", slug="zeta")
    body = client_for(member).get(TOKENS, HTTP_REFERER="http://testserver/w/zeta/runs/").content.decode()
    assert 'href="/w/zeta/runs/"' not in body and 'href="/w/acme/runs/"' not in body

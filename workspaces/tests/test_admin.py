"""Tenancy in the Django admin: the services' rules (first admin, last admin, audit) apply there too."""

from __future__ import annotations

import pytest

from workspaces.models import ApiToken, AuditEvent, Role, Workspace, WorkspaceMembership
from workspaces.services import api_token_create
from workspaces.tests.factories import make_user

pytestmark = pytest.mark.django_db


@pytest.fixture
def root(db):
    return make_user("root", is_staff=True, is_superuser=True)


def _inline_management(prefix: str = "memberships") -> dict[str, str]:
    return {f"{prefix}-TOTAL_FORMS": "0", f"{prefix}-INITIAL_FORMS": "0", f"{prefix}-MIN_NUM_FORMS": "0", f"{prefix}-MAX_NUM_FORMS": "1000"}


def test_an_operator_creates_a_workspace_with_its_first_admin_and_renames_it(root, admin, client_for):
    client = client_for(root)
    assert client.get("/admin/workspaces/workspace/add/").status_code == 200
    response = client.post(
        "/admin/workspaces/workspace/add/", {"name": "Initech", "slug": "initech", "admin": admin.pk, **_inline_management()}
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    workspace = Workspace.objects.get(slug="initech")
    assert WorkspaceMembership.objects.get(workspace=workspace).user == admin
    assert AuditEvent.objects.filter(workspace=workspace, action="workspace.created", actor=root).exists()
    existing = sum(1 for _ in WorkspaceMembership.objects.filter(workspace=workspace))
    data = {"name": "Initech Corp", "slug": "renamed", **_inline_management(), "memberships-INITIAL_FORMS": str(existing)}
    data["memberships-TOTAL_FORMS"] = str(existing)
    response = client.post(f"/admin/workspaces/workspace/{workspace.pk}/change/", data)
    assert response.status_code == 302, response.content.decode()[:2000]
    workspace.refresh_from_db()
    assert (workspace.name, workspace.slug) == ("Initech Corp", "initech")  # the slug (its URLs) never changes
    assert AuditEvent.objects.filter(workspace=workspace, action="workspace.renamed", actor=root).exists()


def test_a_taken_slug_is_a_form_error(root, admin, workspace, client_for):
    data = {"name": "Again", "slug": workspace.slug, "admin": admin.pk, **_inline_management()}
    response = client_for(root).post("/admin/workspaces/workspace/add/", data)
    assert response.status_code == 200 and "errorlist" in response.content.decode()
    assert Workspace.objects.count() == 1


def test_the_last_admin_cannot_be_demoted_or_removed_in_the_admin(root, admin, workspace, client_for):
    client = client_for(root)
    membership = WorkspaceMembership.objects.get(user=admin, workspace=workspace)
    response = client.post(f"/admin/workspaces/workspacemembership/{membership.pk}/change/", {"role": Role.VIEWER})
    assert response.status_code == 200 and "at least one admin" in response.content.decode()
    response = client.post(f"/admin/workspaces/workspacemembership/{membership.pk}/delete/", {"post": "yes"}, follow=True)
    assert "last admin" in response.content.decode()
    membership.refresh_from_db()
    assert membership.role == Role.ADMIN


def test_an_operator_adds_and_removes_a_member_through_the_services(root, admin, workspace, client_for):
    client = client_for(root)
    user = make_user("newcomer")
    response = client.post("/admin/workspaces/workspacemembership/add/", {"workspace": workspace.pk, "user": user.pk, "role": Role.MEMBER})
    assert response.status_code == 302, response.content.decode()[:2000]
    membership = WorkspaceMembership.objects.get(user=user)
    assert AuditEvent.objects.filter(action="member.added", target="newcomer", actor=root).exists()
    again = client.post("/admin/workspaces/workspacemembership/add/", {"workspace": workspace.pk, "user": user.pk, "role": Role.ADMIN})
    assert again.status_code == 200 and "already a member" in again.content.decode()
    assert client.post(f"/admin/workspaces/workspacemembership/{membership.pk}/delete/", {"post": "yes"}).status_code == 302
    assert AuditEvent.objects.filter(action="member.removed", target="newcomer", actor=root).exists()


def test_tokens_are_only_read_and_revoked_in_the_admin(root, admin, client_for):
    token, _ = api_token_create(user=admin, name="CI")
    client = client_for(root)
    client.post(f"/admin/workspaces/apitoken/{token.pk}/change/", {"name": "renamed", "expires_at": "", "revoked_at": ""})
    token.refresh_from_db()
    assert token.name == "CI" and token.revoked_at is None
    client.post("/admin/workspaces/apitoken/", {"action": "revoke", "_selected_action": [token.pk]})
    assert ApiToken.objects.get(pk=token.pk).revoked_at is not None

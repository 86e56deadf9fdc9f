"""Adding a member reveals nothing about other users; members can leave (not the last admin)."""

from __future__ import annotations

import pytest
from django.urls import reverse

from workspaces.models import AuditEvent, Role, WorkspaceMembership
from workspaces.tests.factories import add_member, make_user

pytestmark = pytest.mark.django_db


def _messages(response) -> list[str]:
    return [str(m) for m in response.context["messages"]]


def test_the_add_member_page_answers_the_same_for_existing_and_unknown_users(client_for, admin, workspace, stranger):
    client = client_for(admin)
    url = reverse("workspaces:member_add", args=[workspace.slug])
    existing = client.post(url, {"username": "charlie", "role": "viewer"}, follow=True)
    unknown = client.post(url, {"username": "nobody-here", "role": "viewer"}, follow=True)
    assert existing.status_code == unknown.status_code == 200
    said_existing, said_unknown = _messages(existing), _messages(unknown)
    assert said_existing == ["If a user named “charlie” exists, they are now a viewer of this workspace."]
    assert said_unknown == ["If a user named “nobody-here” exists, they are now a viewer of this workspace."]
    assert [m.replace("charlie", "X") for m in said_existing] == [m.replace("nobody-here", "X") for m in said_unknown]
    assert WorkspaceMembership.objects.get(workspace=workspace, user=stranger).role == Role.VIEWER
    assert stranger.email.encode() not in existing.content


def test_the_add_member_api_answers_the_same_for_existing_and_unknown_users(api_client_for, admin, workspace, stranger):
    client = api_client_for(admin)
    existing = client.post("/api/v1/workspaces/acme/members", {"username": "charlie", "role": "member"}, format="json")
    unknown = client.post("/api/v1/workspaces/acme/members", {"username": "nobody-here", "role": "member"}, format="json")
    assert existing.status_code == unknown.status_code == 202
    assert existing.json() == {
        "username": "charlie",
        "role": "member",
        "message": "If a user named “charlie” exists, they are now a member of this workspace.",
    }
    assert unknown.json()["message"].replace("nobody-here", "charlie") == existing.json()["message"]
    assert set(existing.json()) == set(unknown.json())
    assert b"@" not in existing.content
    assert WorkspaceMembership.objects.filter(workspace=workspace, user=stranger).exists()


def test_adding_an_unknown_user_creates_no_account(api_client_for, admin, workspace, django_user_model):
    api_client_for(admin).post("/api/v1/workspaces/acme/members", {"username": "ghost", "role": "member"}, format="json")
    assert not django_user_model.objects.filter(username="ghost").exists()


def test_no_member_listing_shows_another_users_email(client_for, api_client_for, admin, member, workspace):
    page = client_for(admin).get(reverse("workspaces:members", args=[workspace.slug]))
    assert member.username.encode() in page.content
    assert member.email.encode() not in page.content
    listed = api_client_for(admin).get("/api/v1/workspaces/acme/members").json()["results"]
    assert {m["username"] for m in listed} == {"alice", "bob"}
    assert all("email" not in m for m in listed)
    pk = WorkspaceMembership.objects.get(user=member).pk
    assert "email" not in api_client_for(admin).get(f"/api/v1/workspaces/acme/members/{pk}").json()


@pytest.mark.parametrize("persona", ["member", "viewer"])
def test_a_member_leaves_from_the_members_page(request, client, workspace, admin, persona):
    user = request.getfixturevalue(persona)
    client.force_login(user)
    page = client.get(reverse("workspaces:members", args=[workspace.slug]))
    assert b'id="leave-workspace"' in page.content
    response = client.post(reverse("workspaces:member_leave", args=[workspace.slug]))
    assert response.status_code == 302
    assert not WorkspaceMembership.objects.filter(workspace=workspace, user=user).exists()
    assert AuditEvent.objects.filter(workspace=workspace, action="member.left", target=user.username).exists()
    assert client.get(reverse("workspaces:dashboard", args=[workspace.slug])).status_code == 404


def test_an_admin_leaves_when_another_admin_remains(client_for, admin, workspace):
    add_member(workspace, make_user("second-admin"), Role.ADMIN)
    client_for(admin).post(reverse("workspaces:member_leave", args=[workspace.slug]))
    assert not WorkspaceMembership.objects.filter(workspace=workspace, user=admin).exists()


def test_the_last_admin_cannot_leave_from_the_page(client_for, admin, member, workspace):
    response = client_for(admin).post(reverse("workspaces:member_leave", args=[workspace.slug]), follow=True)
    assert "last admin" in " ".join(_messages(response))
    assert WorkspaceMembership.objects.filter(workspace=workspace, user=admin, role=Role.ADMIN).exists()


def test_a_member_leaves_through_the_api(api_client_for, member, workspace):
    response = api_client_for(member).delete("/api/v1/workspaces/acme/members/me")
    assert response.status_code == 204
    assert not WorkspaceMembership.objects.filter(workspace=workspace, user=member).exists()


def test_the_last_admin_cannot_leave_through_the_api(api_client_for, admin, workspace):
    response = api_client_for(admin).delete("/api/v1/workspaces/acme/members/me")
    assert response.status_code == 400
    assert "last admin" in response.json()["error"]["message"]
    assert WorkspaceMembership.objects.filter(workspace=workspace, user=admin).exists()


def test_a_stranger_cannot_leave_a_workspace_they_are_not_in(api_client_for, client_for, stranger, workspace):
    assert api_client_for(stranger).delete("/api/v1/workspaces/acme/members/me").status_code == 404
    assert client_for(stranger).post(reverse("workspaces:member_leave", args=[workspace.slug])).status_code == 404

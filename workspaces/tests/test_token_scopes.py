"""Scoped API tokens and invitations (docs/operations.md "API tokens", "Invitations").

The authorization matrix: each scope × a representative endpoint per role it needs, for each role;
a token limited to one workspace; existing (unscoped) tokens keep working in full; tokens listed
and revoked through the API; invitations single-use, expiring, for the invited email only."""

from __future__ import annotations

import datetime as dt

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from workspaces import services
from workspaces.models import ApiToken, Invitation, Role, TokenScope, WorkspaceMembership
from workspaces.tests.factories import add_member, make_user

pytestmark = pytest.mark.django_db


def bearer(raw: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    return client


def token(user, *, scope: str = TokenScope.ADMIN, workspace=None) -> str:
    return services.api_token_create(user=user, name=f"{scope}", scope=scope, workspace=workspace)[1]


# Representative endpoints: what each needs (role, scope), and the status when both allow it.
# The writes send an empty body: allowed, they answer 400 (the body is checked after the access).
ENDPOINTS = {
    "list runs": ("get", "/api/v1/workspaces/acme/runs", Role.VIEWER, TokenScope.READ, 200),
    "start a run": ("post", "/api/v1/workspaces/acme/runs", Role.MEMBER, TokenScope.RUN, 400),
    "create a comparison (gate)": ("post", "/api/v1/workspaces/acme/comparisons", Role.MEMBER, TokenScope.RUN, 400),
    "invite a member": ("post", "/api/v1/workspaces/acme/invitations", Role.ADMIN, TokenScope.ADMIN, 400),
}
RANK = {Role.VIEWER: 0, Role.MEMBER: 1, Role.ADMIN: 2, TokenScope.READ: 0, TokenScope.RUN: 1}
SCOPE_RANK = {TokenScope.READ: 0, TokenScope.RUN: 1, TokenScope.ADMIN: 2}


@pytest.mark.parametrize("endpoint", ENDPOINTS)
@pytest.mark.parametrize("scope", [TokenScope.READ, TokenScope.RUN, TokenScope.ADMIN])
@pytest.mark.parametrize("role", [Role.VIEWER, Role.MEMBER, Role.ADMIN])
def test_the_authorization_matrix(request, workspace, admin, endpoint, scope, role):
    user = {Role.ADMIN: admin}.get(role) or request.getfixturevalue({Role.MEMBER: "member", Role.VIEWER: "viewer"}[role])
    method, path, needs_role, needs_scope, allowed = ENDPOINTS[endpoint]
    response = getattr(bearer(token(user, scope=scope)), method)(path, {}, format="json")
    ok = RANK[role] >= RANK[needs_role] and SCOPE_RANK[scope] >= SCOPE_RANK[needs_scope]
    assert response.status_code == (allowed if ok else 403), (endpoint, role, scope, response.content)
    if not ok and SCOPE_RANK[scope] < SCOPE_RANK[needs_scope] and RANK[role] >= RANK[needs_role]:
        assert f"scope is {scope}" in response.json()["error"]["message"]


def test_a_token_limited_to_one_workspace_sees_the_others_as_strangers_do(workspace, other_workspace, admin):
    add_member(other_workspace, admin, Role.ADMIN)
    limited = bearer(token(admin, workspace=workspace))
    assert limited.get("/api/v1/workspaces/acme/runs").status_code == 200
    assert limited.get("/api/v1/workspaces/globex/runs").status_code == 404
    assert limited.get("/api/v1/workspaces/globex").status_code == 404
    assert [w["slug"] for w in limited.get("/api/v1/workspaces").json()["results"]] == ["acme"]
    assert [m["slug"] for m in limited.get("/api/v1/me").json()["memberships"]] == ["acme"]
    full = bearer(token(admin))
    assert full.get("/api/v1/workspaces/globex/runs").status_code == 200


def test_a_token_made_before_scopes_works_in_full_everywhere(workspace, admin):
    raw = "act_" + "legacy-token-value-0123456789abcdef"
    ApiToken.objects.create(user=admin, name="old", token_hash=ApiToken.hash(raw), prefix=raw[:10])  # no scope, no workspace given
    stored = ApiToken.objects.get(name="old")
    assert (stored.scope, stored.workspace_id) == (TokenScope.ADMIN, None)
    assert bearer(raw).post("/api/v1/workspaces/acme/invitations", {}, format="json").status_code == 400  # an admin write: allowed


def test_tokens_are_listed_without_values_and_revoked_through_the_api(workspace, admin):
    raw = token(admin)
    client = bearer(raw)
    created = client.post("/api/v1/tokens", {"name": "ci", "scope": "run", "workspace": "acme"}, format="json")
    assert created.status_code == 201, created.content
    body = created.json()
    assert body["token"].startswith("act_") and body["scope"] == "run" and body["workspace"] == "acme"
    listed = client.get("/api/v1/tokens").json()
    assert {t["name"] for t in listed["results"]} == {"admin", "ci"}
    assert all("token" not in t and "token_hash" not in t for t in listed["results"])
    ci = bearer(body["token"])
    assert ci.get("/api/v1/workspaces/acme/runs").status_code == 200
    assert client.delete(f"/api/v1/tokens/{body['id']}").json()["revoked_at"]
    assert ci.get("/api/v1/workspaces/acme/runs").status_code == 401


def test_a_limited_token_cannot_make_or_revoke_tokens(workspace, admin, stranger):
    for limited in (token(admin, scope=TokenScope.READ), token(admin, scope=TokenScope.RUN), token(admin, workspace=workspace)):
        response = bearer(limited).post("/api/v1/tokens", {"name": "wider", "scope": "admin"}, format="json")
        assert response.status_code == 403
    theirs = services.api_token_create(user=stranger, name="theirs")[0]
    assert bearer(token(admin)).delete(f"/api/v1/tokens/{theirs.pk}").status_code == 404  # another user's token


def test_a_token_cannot_be_limited_to_a_workspace_its_user_is_not_in(workspace, other_workspace, admin):
    response = bearer(token(admin)).post("/api/v1/tokens", {"name": "x", "workspace": "globex"}, format="json")
    assert response.status_code == 404


def test_an_invitation_is_accepted_once_by_the_invited_email_only(workspace, admin):
    created = bearer(token(admin)).post(
        "/api/v1/workspaces/acme/invitations", {"email": "Dana@Example.com", "role": "member"}, format="json"
    )
    assert created.status_code == 201, created.content
    raw = created.json()["token"]
    assert "invitations/accept/?token=" in created.json()["accept_url"]
    stored = Invitation.objects.get()
    assert stored.token_hash == ApiToken.hash(raw) and raw not in str(stored.__dict__)  # only the hash is kept
    eve = make_user("eve")
    eve.email = "eve@example.com"
    eve.save()
    refused = bearer(token(eve)).post("/api/v1/invitations/accept", {"token": raw}, format="json")
    assert refused.status_code == 403 and refused.json()["error"]["code"] == "invitation_email_mismatch"
    dana = make_user("dana")
    dana.email = "dana@example.com"
    dana.save()
    accepted = bearer(token(dana)).post("/api/v1/invitations/accept", {"token": raw}, format="json")
    assert accepted.status_code == 201 and accepted.json()["slug"] == "acme"
    assert WorkspaceMembership.objects.get(workspace=workspace, user=dana).role == Role.MEMBER
    again = bearer(token(dana)).post("/api/v1/invitations/accept", {"token": raw}, format="json")
    assert again.status_code == 409
    listed = bearer(token(admin)).get("/api/v1/workspaces/acme/invitations").json()["results"]
    assert [(i["email"], i["status"]) for i in listed] == [("dana@example.com", "accepted")]


def test_an_expired_or_revoked_invitation_is_refused(workspace, admin):
    dana = make_user("dana")
    dana.email = "dana@example.com"
    dana.save()
    expired, raw_expired = services.invitation_create(workspace=workspace, email="dana@example.com", role=Role.VIEWER, actor=admin)
    Invitation.objects.filter(pk=expired.pk).update(expires_at=timezone.now() - dt.timedelta(seconds=1))
    response = bearer(token(dana)).post("/api/v1/invitations/accept", {"token": raw_expired}, format="json")
    assert response.status_code == 409 and response.json()["error"]["code"] == "invitation_expired"
    revoked, raw_revoked = services.invitation_create(workspace=workspace, email="dana@example.com", role=Role.VIEWER, actor=admin)
    assert bearer(token(admin)).delete(f"/api/v1/workspaces/acme/invitations/{revoked.pk}").json()["status"] == "revoked"
    response = bearer(token(dana)).post("/api/v1/invitations/accept", {"token": raw_revoked}, format="json")
    assert response.status_code == 409 and response.json()["error"]["code"] == "invitation_revoked"
    unknown = bearer(token(dana)).post("/api/v1/invitations/accept", {"token": "aci_nope"}, format="json")
    assert unknown.status_code == 404


def test_invitations_are_the_workspace_admins_own(workspace, admin, member, stranger):
    assert bearer(token(member)).get("/api/v1/workspaces/acme/invitations").status_code == 403
    assert bearer(token(stranger)).get("/api/v1/workspaces/acme/invitations").status_code == 404
    invitation, _ = services.invitation_create(workspace=workspace, email="x@example.com", role=Role.VIEWER, actor=admin)
    assert bearer(token(stranger)).delete(f"/api/v1/workspaces/globex/invitations/{invitation.pk}").status_code == 404
    bad = bearer(token(admin)).post("/api/v1/workspaces/acme/invitations", {"email": "not an email"}, format="json")
    assert bad.status_code == 400 and "email" in str(bad.json())


def test_the_accept_page_joins_the_signed_in_invited_user(client, workspace, admin):
    _, raw = services.invitation_create(workspace=workspace, email="dana@example.com", role=Role.VIEWER, actor=admin)
    dana = make_user("dana")
    dana.email = "dana@example.com"
    dana.save()
    anonymous = client.get(f"/invitations/accept/?token={raw}")
    assert anonymous.status_code == 302 and "login" in anonymous["Location"]
    client.force_login(dana)
    page = client.get(f"/invitations/accept/?token={raw}")
    assert page.status_code == 200 and "Acme" in page.content.decode() and "Join Acme" in page.content.decode()
    joined = client.post("/invitations/accept/", {"token": raw})
    assert joined.status_code == 302 and joined["Location"] == "/w/acme/"
    assert WorkspaceMembership.objects.filter(workspace=workspace, user=dana, role=Role.VIEWER).exists()
    assert "accepted" in client.get(f"/invitations/accept/?token={raw}").content.decode()


def test_the_token_page_makes_a_scoped_token_limited_to_one_workspace(client_for, workspace, admin):
    client = client_for(admin)
    response = client.post("/settings/api-tokens/", {"name": "ci", "scope": "read", "workspace": "acme"})
    assert response.status_code == 302
    made = ApiToken.objects.get(user=admin, name="ci")
    assert (made.scope, made.workspace_id) == (TokenScope.READ, workspace.pk)
    page = client.get("/settings/api-tokens/").content.decode()
    assert "<td>Read</td>" in page and "<td>Acme</td>" in page
    refused = client.post("/settings/api-tokens/", {"name": "x", "scope": "everything"})
    assert refused.status_code == 200 and "scope" in refused.context["form"].errors


def test_an_admin_invites_from_the_members_page_and_sees_the_link_once(client_for, workspace, admin, member):
    client = client_for(admin)
    response = client.post("/w/acme/members/invite/", {"email": "dana@example.com", "role": "viewer", "days": 3})
    assert response.status_code == 302
    page = client.get("/w/acme/members/").content.decode()
    assert "invitations/accept/?token=aci_" in page and "dana@example.com" in page
    assert "invitations/accept/?token=aci_" not in client.get("/w/acme/members/").content.decode()  # shown once
    invitation = Invitation.objects.get()
    assert (invitation.role, round((invitation.expires_at - invitation.created_at).total_seconds() / 86400)) == (Role.VIEWER, 3)
    assert client_for(member).post("/w/acme/members/invite/", {"email": "x@example.com", "role": "admin", "days": 3}).status_code == 403

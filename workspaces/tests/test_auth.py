from __future__ import annotations

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone
from rest_framework.test import APIClient

from workspaces import services
from workspaces.models import ApiToken
from workspaces.tests.factories import PASSWORD, make_user

pytestmark = pytest.mark.django_db


def test_it_logs_in_and_lands_on_the_first_workspace(client, admin, workspace):
    response = client.post(reverse("login"), {"username": admin.username, "password": PASSWORD}, follow=True)
    assert response.redirect_chain[-1][0] == reverse("workspaces:dashboard", args=[workspace.slug])
    assert b"Acme" in response.content


def test_it_rejects_a_wrong_password(client, admin):
    response = client.post(reverse("login"), {"username": admin.username, "password": "nope"})
    assert response.status_code == 200
    assert "_auth_user_id" not in client.session


def test_it_sends_users_without_a_workspace_to_create_one(client):
    user = make_user("lonely")
    client.force_login(user)
    response = client.get("/")
    assert response["Location"] == reverse("workspaces:create")
    response = client.post(reverse("workspaces:create"), {"name": "Lonely Inc"}, follow=True)
    assert response.redirect_chain[-1][0] == "/w/lonely-inc/"


def test_it_logs_out(client, admin):
    client.force_login(admin)
    client.post(reverse("logout"))
    assert client.get("/").status_code == 302
    assert "_auth_user_id" not in client.session


def test_it_changes_password(client, admin):
    client.force_login(admin)
    response = client.post(
        reverse("password_change"),
        {"old_password": PASSWORD, "new_password1": "a-much-better-password-1", "new_password2": "a-much-better-password-1"},
    )
    assert response.status_code == 302
    admin.refresh_from_db()
    assert admin.check_password("a-much-better-password-1")


def _bearer(raw: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    return client


def test_a_valid_token_authenticates_the_api(admin, workspace):
    token, raw = services.api_token_create(user=admin, name="ci")
    response = _bearer(raw).get("/api/v1/me")
    assert response.status_code == 200
    assert response.json()["username"] == admin.username
    assert response.json()["memberships"] == [{"slug": "acme", "name": "Acme", "role": "admin"}]
    token.refresh_from_db()
    assert token.last_used_at is not None


def test_the_token_is_stored_hashed(admin):
    token, raw = services.api_token_create(user=admin, name="ci")
    assert raw.startswith("act_")
    assert raw not in token.token_hash
    assert token.token_hash == ApiToken.hash(raw)


def test_a_revoked_token_is_refused(admin):
    token, raw = services.api_token_create(user=admin, name="ci")
    services.api_token_revoke(token=token)
    response = _bearer(raw).get("/api/v1/me")
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "unauthenticated"
    assert "revoked" in response.json()["error"]["message"]


def test_an_expired_token_is_refused(admin):
    token, raw = services.api_token_create(user=admin, name="ci", expires_at=timezone.now() + timedelta(days=1))
    ApiToken.objects.filter(pk=token.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    response = _bearer(raw).get("/api/v1/me")
    assert response.status_code == 401
    assert "expired" in response.json()["error"]["message"]


def test_a_wrong_token_is_refused(admin):
    services.api_token_create(user=admin, name="ci")
    response = _bearer("act_not-a-real-token").get("/api/v1/me")
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "unauthenticated"


def test_no_credentials_get_401_with_the_envelope(db):
    response = APIClient().get("/api/v1/me")
    assert response.status_code == 401
    assert set(response.json()["error"]) >= {"code", "message"}


def test_the_api_tokens_page_shows_a_new_token_once_after_a_redirect(client_for, admin):
    client = client_for(admin)
    response = client.post(reverse("workspaces:api_tokens"), {"name": "laptop"})
    assert response.status_code == 302 and response["Location"] == reverse("workspaces:api_tokens")
    shown = client.get(reverse("workspaces:api_tokens"))
    raw = shown.context["new_token"]["value"]
    assert raw.startswith("act_") and raw.encode() in shown.content
    assert "no-store" in shown["Cache-Control"]
    again = client.get(reverse("workspaces:api_tokens"))
    assert raw.encode() not in again.content
    assert b"laptop" in again.content
    assert ApiToken.objects.filter(user=admin).count() == 1  # reloading created nothing


def test_a_token_form_with_errors_creates_nothing_and_stays_on_the_page(client_for, admin):
    response = client_for(admin).post(reverse("workspaces:api_tokens"), {"name": "x" * 101})
    assert response.status_code == 200
    assert response.context["form"].errors
    assert not ApiToken.objects.filter(user=admin).exists()


def test_users_can_revoke_only_their_own_tokens(client_for, admin, member):
    token, _ = services.api_token_create(user=member, name="bob's")
    response = client_for(admin).post(reverse("workspaces:api_token_revoke", args=[token.pk]))
    assert response.status_code == 404
    token.refresh_from_db()
    assert token.revoked_at is None


def test_session_auth_on_the_api_enforces_csrf(admin):
    client = APIClient(enforce_csrf_checks=True)
    client.force_login(admin)
    assert client.get("/api/v1/me").status_code == 200
    response = client.post("/api/v1/workspaces/acme/members", {"username": "x", "role": "viewer"}, format="json")
    assert response.status_code == 403
    assert "CSRF" in response.json()["error"]["message"]

from __future__ import annotations

import io

import pytest
from django.core.management import CommandError, call_command
from rest_framework.test import APIClient

from workspaces.models import ApiToken, Role, Workspace, WorkspaceMembership

pytestmark = pytest.mark.django_db


def _run(*args) -> str:
    out = io.StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


def test_createworkspace_creates_the_admin_and_prints_a_password(django_user_model):
    out = _run("createworkspace", "lab", "--name", "The Lab", "--admin", "ops")
    user = django_user_model.objects.get(username="ops")
    password = out.strip().splitlines()[-1].split(": ")[-1]
    assert user.check_password(password)
    assert WorkspaceMembership.objects.get(workspace__slug="lab", user=user).role == Role.ADMIN


def test_createworkspace_refuses_a_taken_slug(workspace):
    with pytest.raises(CommandError, match="already exists"):
        _run("createworkspace", "acme", "--name", "Again", "--admin", "ops")


def test_addmember_adds_with_a_role(workspace, django_user_model):
    user = django_user_model.objects.create_user("zed")
    _run("addmember", "acme", "zed", "--role", "viewer")
    assert WorkspaceMembership.objects.get(workspace=workspace, user=user).role == "viewer"


def test_addmember_names_what_is_missing(workspace):
    with pytest.raises(CommandError, match="No user named"):
        _run("addmember", "acme", "ghost")


def test_createapitoken_prints_a_working_token(admin):
    raw = _run("createapitoken", admin.username, "--name", "ci").strip()
    assert ApiToken.objects.get(token_hash=ApiToken.hash(raw)).name == "ci"
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    assert client.get("/api/v1/me").status_code == 200


def test_seed_demo_is_idempotent_and_the_login_works(client):
    first = _run("seed_demo")
    second = _run("seed_demo")
    assert "User:     demo" in first and first.count("Password") == 1
    assert Workspace.objects.filter(slug="demo").count() == 1
    login_lines = [line for line in first.splitlines() if line.strip().startswith(("URL:", "User:", "Password:"))]
    assert len(login_lines) == 3
    assert all(line in second.splitlines() for line in login_lines)
    assert client.login(username="demo", password="demo-password")
    assert client.get("/").status_code == 302


def test_healthz_reports_db_and_broker(client):
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"db": "ok", "broker": "ok"}


def test_healthz_names_the_failing_broker(client, monkeypatch):
    from workspaces import views

    monkeypatch.setattr(views, "_broker_ok", lambda: (False, "OperationalError"))
    response = client.get("/healthz")
    assert response.status_code == 503
    assert response.json()["broker"] == "error: OperationalError"
    assert response.json()["db"] == "ok"

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


def test_addmember_create_makes_a_missing_user_and_prints_its_password_once(workspace, django_user_model):
    out = _run("addmember", "acme", "newcomer", "--role", "member", "--create")
    password = out.strip().splitlines()[-1].split(": ")[-1]
    user = django_user_model.objects.get(username="newcomer")
    assert user.check_password(password)
    assert WorkspaceMembership.objects.get(workspace=workspace, user=user).role == "member"


def test_createapitoken_prints_a_working_token(admin):
    raw = _run("createapitoken", admin.username, "--name", "ci").strip()
    assert ApiToken.objects.get(token_hash=ApiToken.hash(raw)).name == "ci"
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    assert client.get("/api/v1/me").status_code == 200


def _login(client, path: str, username: str, password: str):
    """Log in through the real form (the lockout backend sees the request like a browser's)."""
    page = client.get(path)
    assert page.status_code == 200
    return client.post(path, {"username": username, "password": password})


def test_seed_demo_is_idempotent_and_the_login_works(client):
    first = _run("seed_demo")
    second = _run("seed_demo")
    assert "User:     demo" in first and first.count("Password:") == 1
    assert Workspace.objects.filter(slug="demo").count() == 1
    login_lines = [line for line in first.splitlines() if line.strip().startswith(("URL:", "User:", "Password:"))]
    assert len(login_lines) == 3
    assert all(line in second.splitlines() for line in login_lines)
    response = _login(client, "/accounts/login/", "demo", "demo-password")
    assert response.status_code == 302
    assert client.get("/").status_code == 302


def test_the_demo_user_is_a_workspace_admin_and_not_a_superuser(django_user_model):
    _run("seed_demo")
    demo = django_user_model.objects.get(username="demo")
    assert not demo.is_superuser and not demo.is_staff
    assert WorkspaceMembership.objects.get(workspace__slug="demo", user=demo).role == Role.ADMIN


def test_the_demo_password_does_not_open_the_django_admin(client):
    _run("seed_demo")
    response = _login(client, "/admin/login/", "demo", "demo-password")
    assert response.status_code == 200  # the form again, with an error: not staff
    assert client.get("/admin/").status_code == 302


def test_seed_demo_takes_superuser_rights_from_an_old_demo_user(django_user_model):
    django_user_model.objects.create_superuser("demo", "demo@example.com", "demo-password")
    _run("seed_demo")
    demo = django_user_model.objects.get(username="demo")
    assert not demo.is_superuser and not demo.is_staff


def _superuser_password(out: str) -> str:
    lines = out.splitlines()
    index = next(i for i, line in enumerate(lines) if "superuser 'admin', password:" in line)
    return lines[index + 1].strip()


def test_seed_demo_prints_a_generated_superuser_password_once_and_it_opens_the_admin(client, django_user_model):
    first = _run("seed_demo")
    password = _superuser_password(first)
    assert len(password) >= 20 and password != "demo-password"
    superuser = django_user_model.objects.get(username="admin")
    assert superuser.is_superuser and superuser.is_staff
    assert password not in superuser.password  # only the hash is stored
    hashed = superuser.password

    second = _run("seed_demo")
    assert password not in second
    assert "superuser 'admin', password:" not in second
    assert "changepassword admin" in second
    superuser.refresh_from_db()
    assert superuser.password == hashed  # rerunning does not reset it

    assert _login(client, "/admin/login/?next=/admin/", "admin", password).status_code == 302
    assert client.get("/admin/").status_code == 200


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

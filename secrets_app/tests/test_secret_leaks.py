"""The value of a secret must not come back out of anything: database dumps, pages, API, admin, logs."""

from __future__ import annotations

import base64
import io
import logging

import pytest
from django.core.management import call_command
from django.db import connection

from secrets_app.models import WorkspaceSecret
from secrets_app.services import secret_set, secrets_resolve_for_run
from workspaces.models import AuditEvent
from workspaces.tests.factories import make_user

VALUES = {
    "API_VALUE": "sk-live-API-0123456789abcdef",
    "UI_VALUE": "ui-form-value-q9w8e7r6t5",
    "ADMIN_VALUE": "admin-form-value-z1x2c3v4",
    "SERVICE_VALUE": "service-value-ünïcode-42",
}


def _forms(value: str) -> list[bytes]:
    raw = value.encode()
    return [raw, value.encode("utf-16-le"), base64.b64encode(raw), raw.hex().encode()]


def assert_no_value_in(text: str | bytes, where: str) -> None:
    data = text.encode() if isinstance(text, str) else bytes(text)
    for key, value in VALUES.items():
        for form in _forms(value):
            assert form not in data, f"{key} leaked into {where}"


@pytest.fixture
def root(db):
    return make_user("root", is_staff=True, is_superuser=True)


@pytest.fixture
def all_secrets_set(workspace, admin, root, api_client_for, client_for, caplog):
    caplog.set_level(logging.DEBUG)
    from workspaces.models import Role, WorkspaceMembership

    WorkspaceMembership.objects.create(workspace=workspace, user=root, role=Role.ADMIN)
    responses = []
    responses.append(api_client_for(admin).put("/api/v1/workspaces/acme/secrets/API_VALUE", {"value": VALUES["API_VALUE"]}, format="json"))
    # replacing goes through the same path and must not leak the old value either
    responses.append(api_client_for(admin).put("/api/v1/workspaces/acme/secrets/API_VALUE", {"value": VALUES["API_VALUE"]}, format="json"))
    client = client_for(root)
    responses.append(client.post("/w/acme/secrets/set/", {"key": "UI_VALUE", "value": VALUES["UI_VALUE"]}, HTTP_HX_REQUEST="true"))
    responses.append(client.post("/w/acme/secrets/set/", {"key": "bad key", "value": VALUES["UI_VALUE"]}, HTTP_HX_REQUEST="true"))
    responses.append(
        client.post(
            "/admin/secrets_app/workspacesecret/add/",
            {"workspace": workspace.pk, "key": "ADMIN_VALUE", "value": VALUES["ADMIN_VALUE"]},
            follow=True,
        )
    )
    secret_set(workspace=workspace, key="SERVICE_VALUE", value=VALUES["SERVICE_VALUE"], actor=admin)
    assert secrets_resolve_for_run(workspace=workspace) == VALUES
    return responses


@pytest.mark.django_db(transaction=True)
def test_it_keeps_every_value_out_of_the_database_pages_api_admin_and_logs(
    all_secrets_set, workspace, admin, root, api_client_for, client_for, caplog
):
    for response in all_secrets_set:
        assert response.status_code in (200, 201), response.status_code
        assert_no_value_in(response.content, f"a response ({response.status_code})")

    # 1. dumpdata of the whole database
    out = io.StringIO()
    call_command("dumpdata", stdout=out)
    dump = out.getvalue()
    assert "API_VALUE" in dump  # the dump really holds the secrets table…
    assert_no_value_in(dump, "dumpdata")  # …but not the values

    # 2. raw SQL over every table and every column
    with connection.cursor() as cursor:
        tables = connection.introspection.table_names(cursor)
        assert "secrets_app_workspacesecret" in tables
        for table in tables:
            cursor.execute(f'SELECT * FROM "{table}"')
            for row in cursor.fetchall():
                for cell in row:
                    if isinstance(cell, bytes | bytearray | memoryview):
                        assert_no_value_in(bytes(cell), f"table {table}")
                    elif cell is not None:
                        assert_no_value_in(str(cell), f"table {table}")

    # 3. admin pages (superuser)
    admin_client = client_for(root)
    secret = WorkspaceSecret.objects.get(key="ADMIN_VALUE")
    audit = AuditEvent.objects.filter(target="ADMIN_VALUE").first()
    assert audit is not None and audit.actor == root
    for url in [
        "/admin/secrets_app/workspacesecret/",
        f"/admin/secrets_app/workspacesecret/{secret.pk}/change/",
        f"/admin/secrets_app/workspacesecret/{secret.pk}/history/",
        f"/admin/secrets_app/workspacesecret/{secret.pk}/delete/",
        "/admin/secrets_app/workspacesecret/add/",
        "/admin/workspaces/auditevent/",
        f"/admin/workspaces/auditevent/{audit.pk}/change/",
        "/admin/",
    ]:
        response = admin_client.get(url)
        assert response.status_code == 200, url
        assert_no_value_in(response.content, url)

    # 4. pages and API for every persona
    for url in ["/w/acme/secrets/", "/w/acme/secrets/set/?key=API_VALUE", "/w/acme/secrets/audit/", "/w/acme/"]:
        response = client_for(admin).get(url)
        assert response.status_code == 200, url
        assert_no_value_in(response.content, url)
    for url in ["/api/v1/workspaces/acme/secrets", "/api/schema/"]:
        response = api_client_for(admin).get(url)
        assert response.status_code == 200, url
        assert_no_value_in(response.content, url)

    # 5. str/repr and every log line emitted along the way
    for s in WorkspaceSecret.objects.all():
        assert_no_value_in(str(s) + repr(s), "str/repr")
    records = caplog.get_records("setup") + caplog.get_records("call")
    assert any("API_VALUE" in r.getMessage() for r in records), "logging was captured"
    assert_no_value_in("\n".join(f"{r.getMessage()} {r.args!r} {r.exc_text or ''}" for r in records), "logs")


@pytest.mark.django_db
def test_an_admin_edit_without_a_value_keeps_the_old_one(workspace, admin, root, client_for):
    secret, _ = secret_set(workspace=workspace, key="K", value="keep-me", actor=admin)
    response = client_for(root).post(f"/admin/secrets_app/workspacesecret/{secret.pk}/change/", {"value": ""})
    assert response.status_code == 302
    assert secrets_resolve_for_run(workspace=workspace) == {"K": "keep-me"}
    response = client_for(root).post(f"/admin/secrets_app/workspacesecret/{secret.pk}/change/", {"value": "new-value"})
    assert response.status_code == 302
    assert secrets_resolve_for_run(workspace=workspace) == {"K": "new-value"}
    assert AuditEvent.objects.filter(action="secret.updated", actor=root).count() == 1


@pytest.mark.django_db
def test_an_admin_delete_is_audited(workspace, admin, root, client_for):
    secret, _ = secret_set(workspace=workspace, key="K", value="v", actor=admin)
    response = client_for(root).post(f"/admin/secrets_app/workspacesecret/{secret.pk}/delete/", {"post": "yes"})
    assert response.status_code == 302
    assert not WorkspaceSecret.objects.exists()
    assert AuditEvent.objects.filter(action="secret.deleted", actor=root).exists()


@pytest.mark.django_db
def test_staff_who_are_not_workspace_admins_do_not_see_its_secrets_in_the_admin(workspace, admin, member, client_for):
    from django.contrib.auth.models import Permission

    member.is_staff = True
    member.save()
    member.user_permissions.set(Permission.objects.filter(codename__endswith="workspacesecret"))
    secret_set(workspace=workspace, key="HIDDEN_FROM_MEMBER", value="v", actor=admin)
    body = client_for(member).get("/admin/secrets_app/workspacesecret/").content.decode()
    assert "HIDDEN_FROM_MEMBER" not in body


@pytest.mark.django_db
def test_an_admin_sets_allowed_hosts_in_the_admin_without_touching_the_value(workspace, admin, root, client_for):
    secret, _ = secret_set(workspace=workspace, key="K", value="admin-kept-value", actor=admin)
    client = client_for(root)
    page = client.get(f"/admin/secrets_app/workspacesecret/{secret.pk}/change/").content.decode()
    assert "Allowed hosts" in page and "admin-kept-value" not in page
    response = client.post(f"/admin/secrets_app/workspacesecret/{secret.pk}/change/", {"value": "", "hosts": "API.example.com\n"})
    assert response.status_code == 302
    secret.refresh_from_db()
    assert secret.allowed_hosts == ["api.example.com"]
    assert secrets_resolve_for_run(workspace=workspace) == {"K": "admin-kept-value"}
    listing = client.get("/admin/secrets_app/workspacesecret/").content.decode()
    assert "api.example.com" in listing and "admin-kept-value" not in listing
    bad = client.post(f"/admin/secrets_app/workspacesecret/{secret.pk}/change/", {"value": "", "hosts": "https://x.example.com"})
    assert bad.status_code == 200 and "leave out the scheme" in bad.content.decode()

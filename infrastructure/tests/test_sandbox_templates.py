"""Sandbox templates (issue 26 item 4): operators add and change them in the admin and the API,
through the services' rules; signed-in users read them; others cannot write."""

from __future__ import annotations

import json

import pytest

from infrastructure.models import SandboxTemplate
from infrastructure.services import sandbox_template_create
from workspaces.tests.factories import make_user

BASE = "/api/v1/sandbox-templates"


@pytest.fixture
def root(db):
    return make_user("root", is_staff=True, is_superuser=True)


@pytest.mark.django_db
def test_an_operator_adds_a_template_in_the_admin_and_a_bad_path_is_a_field_error(root, client_for):
    client = client_for(root)
    data = {"template_id": "data", "name": "Data", "packages": json.dumps(["tree"]), "read_only_paths": json.dumps(["/etc/passwd"])}
    response = client.post("/admin/infrastructure/sandboxtemplate/add/", data)
    assert response.status_code == 200 and "must be an absolute path under /opt/" in response.content.decode()
    assert not SandboxTemplate.objects.exists()
    data["read_only_paths"] = json.dumps(["/opt/data/", "/opt/data"])
    assert client.post("/admin/infrastructure/sandboxtemplate/add/", data).status_code == 302
    template = SandboxTemplate.objects.get(template_id="data")
    assert template.packages == ["tree"] and template.read_only_paths == ["/opt/data"]
    assert client.get(f"/admin/infrastructure/sandboxtemplate/{template.pk}/change/").status_code == 200


@pytest.mark.django_db
def test_staff_write_templates_through_the_api_members_read_them_and_strangers_cannot(root, member, api_client_for, client):
    response = api_client_for(root).post(BASE, {"template_id": "viewer", "name": "Viewer", "packages": ["Tree", "tree"]}, format="json")
    assert response.status_code == 201, response.content
    assert response.json()["packages"] == ["tree"]
    assert api_client_for(member).post(BASE, {"template_id": "x", "name": "X"}, format="json").status_code == 403
    assert api_client_for(member).patch(f"{BASE}/viewer", {"name": "Mine"}, format="json").status_code == 403
    assert [t["template_id"] for t in api_client_for(member).get(BASE).json()] == ["viewer"]
    assert client.get(BASE).status_code in (401, 403)
    bad = api_client_for(root).patch(f"{BASE}/viewer", {"packages": ["not a package"]}, format="json")
    assert bad.status_code == 400 and "packages" in bad.json()["error"]["fields"]
    assert api_client_for(root).patch(f"{BASE}/viewer", {"read_only_paths": ["/opt/tools"]}, format="json").json()["read_only_paths"] == [
        "/opt/tools"
    ]
    assert api_client_for(root).get(f"{BASE}/nope").status_code == 404
    duplicate = api_client_for(root).post(BASE, {"template_id": "viewer", "name": "Again"}, format="json")
    assert duplicate.status_code == 400 and "template_id" in duplicate.json()["error"]["fields"]


@pytest.mark.django_db
def test_the_service_refuses_our_own_mount_and_escapes():
    for path in ["/opt/agentclash/packages", "/opt/../etc", "opt/x", "/opt"]:
        with pytest.raises(Exception, match="under /opt/"):
            sandbox_template_create(template_id="t", name="T", read_only_paths=[path])
    assert sandbox_template_create(template_id="t", name="T", read_only_paths=["/opt/agentclash-tools"]).read_only_paths == [
        "/opt/agentclash-tools"
    ]

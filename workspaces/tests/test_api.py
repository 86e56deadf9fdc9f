from __future__ import annotations

import pytest

from workspaces.models import Role, WorkspaceMembership

pytestmark = pytest.mark.django_db


def test_it_lists_only_my_workspaces(api_client_for, admin, stranger):
    body = api_client_for(admin).get("/api/v1/workspaces").json()
    assert [w["slug"] for w in body["results"]] == ["acme"] and body["count"] == 1


def test_workspace_detail_for_members(api_client_for, viewer):
    response = api_client_for(viewer).get("/api/v1/workspaces/acme")
    assert response.status_code == 200
    assert response.json()["role"] == "viewer"


def test_workspace_detail_is_404_for_strangers(api_client_for, stranger, workspace):
    response = api_client_for(stranger).get("/api/v1/workspaces/acme")
    assert response.status_code == 404
    assert response.json() == {"error": {"code": "not_found", "message": "Not found."}}


@pytest.mark.parametrize(
    ("persona", "status"),
    [("admin", 200), ("member", 403), ("viewer", 403), ("stranger", 404)],
)
def test_members_list_by_persona(request, api_client_for, workspace, persona, status):
    user = request.getfixturevalue(persona)
    response = api_client_for(user).get("/api/v1/workspaces/acme/members")
    assert response.status_code == status
    if status == 200:
        assert response.json()["count"] == 1
        assert response.json()["results"][0]["role"] == "admin"
    else:
        assert response.json()["error"]["code"] in {"forbidden", "not_found"}


def test_admins_add_update_and_remove_members(api_client_for, admin, workspace, django_user_model):
    dora = django_user_model.objects.create_user("dora", email="d@example.com")
    client = api_client_for(admin)
    created = client.post("/api/v1/workspaces/acme/members", {"username": "dora", "role": "member"}, format="json")
    assert created.status_code == 202
    pk = WorkspaceMembership.objects.get(workspace=workspace, user=dora).pk
    assert client.patch(f"/api/v1/workspaces/acme/members/{pk}", {"role": "viewer"}, format="json").json()["role"] == "viewer"
    assert client.delete(f"/api/v1/workspaces/acme/members/{pk}").status_code == 204
    assert not WorkspaceMembership.objects.filter(pk=pk).exists()


def test_members_cannot_change_roles(api_client_for, member, admin, workspace):
    pk = WorkspaceMembership.objects.get(user=admin).pk
    response = api_client_for(member).patch(f"/api/v1/workspaces/acme/members/{pk}", {"role": "viewer"}, format="json")
    assert response.status_code == 403
    assert WorkspaceMembership.objects.get(pk=pk).role == Role.ADMIN


def test_a_bad_role_gets_a_400_envelope_naming_the_field(api_client_for, admin, workspace):
    response = api_client_for(admin).post("/api/v1/workspaces/acme/members", {"username": "x", "role": "owner"}, format="json")
    assert response.status_code == 400
    body = response.json()["error"]
    assert body["code"] == "invalid_request"
    assert "role" in body["fields"]
    assert body["message"].startswith("Invalid input: role")


def test_the_last_admin_cannot_be_removed_through_the_api(api_client_for, admin, workspace):
    pk = WorkspaceMembership.objects.get(user=admin).pk
    response = api_client_for(admin).delete(f"/api/v1/workspaces/acme/members/{pk}")
    assert response.status_code == 400
    assert "last admin" in response.json()["error"]["message"]


def test_another_workspaces_member_id_is_404(api_client_for, admin, stranger, other_workspace):
    pk = WorkspaceMembership.objects.get(user=stranger).pk
    response = api_client_for(admin).patch(f"/api/v1/workspaces/acme/members/{pk}", {"role": "viewer"}, format="json")
    assert response.status_code == 404


def test_unknown_api_paths_use_the_envelope(api_client_for, admin):
    response = api_client_for(admin).get("/api/v1/nothing-here")
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "not_found"


def test_swagger_ui_is_served_offline(client, admin):
    client.force_login(admin)
    response = client.get("/api/docs/")
    assert response.status_code == 200
    assert b"cdn" not in response.content.lower()
    assert b"swagger-ui" in response.content

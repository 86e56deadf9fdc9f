from __future__ import annotations

import pytest

from secrets_app.models import WorkspaceSecret
from secrets_app.services import secret_set, secrets_resolve_for_run
from workspaces.models import AuditEvent

LIST = "/api/v1/workspaces/acme/secrets"


def detail(key: str) -> str:
    return f"{LIST}/{key}"


@pytest.mark.django_db
class TestSecretListApi:
    def test_it_lists_keys_and_metadata_for_every_member(self, workspace, admin, member, viewer, api_client_for):
        secret_set(workspace=workspace, key="OPENAI_API_KEY", value="sk-123", actor=admin)
        for user in (admin, member, viewer):
            response = api_client_for(user).get(LIST)
            assert response.status_code == 200
            [item] = response.json()["results"]
            assert item["key"] == "OPENAI_API_KEY" and item["created_by"] == "alice" and item["updated_by"] == "alice"
            assert set(item) == {"key", "allowed_hosts", "created_at", "updated_at", "created_by", "updated_by"}
            assert item["allowed_hosts"] == []

    def test_a_stranger_gets_404(self, workspace, stranger, api_client_for):
        assert api_client_for(stranger).get(LIST).status_code == 404

    def test_anonymous_gets_401(self, workspace, api_client_for):
        assert api_client_for(None).get(LIST).status_code == 401


@pytest.mark.django_db
class TestSecretSetApi:
    def test_an_admin_creates_then_replaces(self, workspace, admin, api_client_for):
        client = api_client_for(admin)
        created = client.put(detail("TOKEN"), {"value": "first"}, format="json")
        assert created.status_code == 201 and created.json()["key"] == "TOKEN"
        assert "value" not in created.json()
        replaced = client.put(detail("TOKEN"), {"value": "second"}, format="json")
        assert replaced.status_code == 200
        assert secrets_resolve_for_run(workspace=workspace) == {"TOKEN": "second"}
        assert list(AuditEvent.objects.values_list("action", flat=True).order_by("id")) == ["secret.created", "secret.updated"]

    @pytest.mark.parametrize("persona", ["member", "viewer"])
    def test_lower_roles_get_403(self, workspace, persona, request, api_client_for):
        user = request.getfixturevalue(persona)
        assert api_client_for(user).put(detail("TOKEN"), {"value": "x"}, format="json").status_code == 403
        assert not WorkspaceSecret.objects.exists()

    def test_a_stranger_gets_404(self, workspace, stranger, api_client_for):
        assert api_client_for(stranger).put(detail("TOKEN"), {"value": "x"}, format="json").status_code == 404

    @pytest.mark.parametrize(
        ("key", "value", "field"),
        [("1BAD", "x", "key"), ("bad-key", "x", "key"), ("K" * 129, "x", "key"), ("OK", "", "value"), ("OK", "a" * 65537, "value")],
    )
    def test_it_rejects_bad_input_with_the_error_envelope(self, workspace, admin, api_client_for, key, value, field):
        response = api_client_for(admin).put(detail(key), {"value": value}, format="json")
        assert response.status_code == 400
        body = response.json()
        assert body["error"]["code"] == "invalid_request" and field in body["error"]["fields"]
        assert not WorkspaceSecret.objects.exists()

    def test_a_missing_value_is_a_field_error(self, workspace, admin, api_client_for):
        response = api_client_for(admin).put(detail("K"), {}, format="json")
        assert response.status_code == 400 and "value" in response.json()["error"]["fields"]


@pytest.mark.django_db
class TestSecretDeleteApi:
    def test_an_admin_deletes(self, workspace, admin, api_client_for):
        secret_set(workspace=workspace, key="K", value="v", actor=admin)
        assert api_client_for(admin).delete(detail("K")).status_code == 204
        assert not WorkspaceSecret.objects.exists()
        assert AuditEvent.objects.filter(action="secret.deleted", target="K").exists()

    def test_an_unknown_key_is_404(self, workspace, admin, api_client_for):
        assert api_client_for(admin).delete(detail("NOPE")).status_code == 404

    @pytest.mark.parametrize("persona", ["member", "viewer"])
    def test_lower_roles_get_403(self, workspace, admin, persona, request, api_client_for):
        secret_set(workspace=workspace, key="K", value="v", actor=admin)
        assert api_client_for(request.getfixturevalue(persona)).delete(detail("K")).status_code == 403
        assert WorkspaceSecret.objects.count() == 1

    def test_a_stranger_cannot_delete_another_workspaces_secret(self, workspace, other_workspace, admin, stranger, api_client_for):
        secret_set(workspace=workspace, key="K", value="v", actor=admin)
        assert api_client_for(stranger).delete(detail("K")).status_code == 404
        # …not even through their own workspace's path.
        assert api_client_for(stranger).delete("/api/v1/workspaces/globex/secrets/K").status_code == 404
        assert WorkspaceSecret.objects.count() == 1


@pytest.mark.django_db
class TestSecretAllowedHostsApi:
    def test_an_admin_sets_value_and_hosts_and_reads_the_hosts_back(self, workspace, admin, member, viewer, api_client_for):
        response = api_client_for(admin).put(
            detail("TOKEN"), {"value": "tok-value-1", "allowed_hosts": ["API.Example.com", "*.example.org:443"]}, format="json"
        )
        assert response.status_code == 201
        assert response.json()["allowed_hosts"] == ["api.example.com", "*.example.org:443"] and "value" not in response.json()
        for user in (admin, member, viewer):
            [item] = api_client_for(user).get(LIST).json()["results"]
            assert item["allowed_hosts"] == ["api.example.com", "*.example.org:443"]
        assert b"tok-value-1" not in response.content
        audit = AuditEvent.objects.get(action="secret.created")
        assert audit.metadata == {"allowed_hosts": ["api.example.com", "*.example.org:443"]}

    def test_hosts_change_without_resending_the_value(self, workspace, admin, api_client_for):
        secret_set(workspace=workspace, key="TOKEN", value="keep-this-value", allowed_hosts=["a.example.com"], actor=admin)
        response = api_client_for(admin).put(detail("TOKEN"), {"allowed_hosts": ["b.example.com"]}, format="json")
        assert response.status_code == 200 and response.json()["allowed_hosts"] == ["b.example.com"]
        assert secrets_resolve_for_run(workspace=workspace) == {"TOKEN": "keep-this-value"}
        audit = AuditEvent.objects.filter(action="secret.updated").get()
        assert audit.metadata == {"value": "kept", "allowed_hosts": {"from": ["a.example.com"], "to": ["b.example.com"]}}

    def test_a_new_value_without_hosts_keeps_the_hosts(self, workspace, admin, api_client_for):
        secret_set(workspace=workspace, key="TOKEN", value="old", allowed_hosts=["a.example.com"], actor=admin)
        response = api_client_for(admin).put(detail("TOKEN"), {"value": "rotated"}, format="json")
        assert response.status_code == 200 and response.json()["allowed_hosts"] == ["a.example.com"]
        assert secrets_resolve_for_run(workspace=workspace) == {"TOKEN": "rotated"}

    def test_an_empty_list_clears_the_hosts(self, workspace, admin, api_client_for):
        secret_set(workspace=workspace, key="TOKEN", value="v", allowed_hosts=["a.example.com"], actor=admin)
        response = api_client_for(admin).put(detail("TOKEN"), {"allowed_hosts": []}, format="json")
        assert response.status_code == 200 and response.json()["allowed_hosts"] == []

    def test_creating_needs_a_value_even_with_hosts(self, workspace, admin, api_client_for):
        response = api_client_for(admin).put(detail("TOKEN"), {"allowed_hosts": ["a.example.com"]}, format="json")
        assert response.status_code == 400 and "value" in response.json()["error"]["fields"]
        assert not WorkspaceSecret.objects.exists()

    @pytest.mark.parametrize(
        "hosts",
        [["https://api.example.com"], ["api.example.com/v1"], ["*"], ["*.com"], ["api.example.com:99999"], "api.example.com", [3]],
    )
    def test_bad_hosts_are_field_errors_and_change_nothing(self, workspace, admin, api_client_for, hosts):
        secret_set(workspace=workspace, key="TOKEN", value="v", allowed_hosts=["a.example.com"], actor=admin)
        response = api_client_for(admin).put(detail("TOKEN"), {"value": "new-value", "allowed_hosts": hosts}, format="json")
        assert response.status_code == 400
        assert "allowed_hosts" in response.json()["error"]["fields"]
        assert b"new-value" not in response.content
        assert WorkspaceSecret.objects.get().allowed_hosts == ["a.example.com"]
        assert secrets_resolve_for_run(workspace=workspace) == {"TOKEN": "v"}

    @pytest.mark.parametrize("persona", ["member", "viewer"])
    def test_only_admins_set_hosts(self, workspace, admin, persona, request, api_client_for):
        secret_set(workspace=workspace, key="TOKEN", value="v", actor=admin)
        user = request.getfixturevalue(persona)
        response = api_client_for(user).put(detail("TOKEN"), {"allowed_hosts": ["evil.example.com"]}, format="json")
        assert response.status_code == 403
        assert WorkspaceSecret.objects.get().allowed_hosts == []

    def test_a_stranger_gets_404(self, workspace, admin, stranger, api_client_for):
        secret_set(workspace=workspace, key="TOKEN", value="v", actor=admin)
        response = api_client_for(stranger).put(detail("TOKEN"), {"allowed_hosts": ["evil.example.com"]}, format="json")
        assert response.status_code == 404
        assert WorkspaceSecret.objects.get().allowed_hosts == []

from __future__ import annotations

import pytest

from secrets_app.models import WorkspaceSecret
from secrets_app.services import secret_set, secrets_resolve_for_run
from workspaces.models import AuditEvent

LIST = "/w/acme/secrets/"
SET = "/w/acme/secrets/set/"
AUDIT = "/w/acme/secrets/audit/"


@pytest.mark.django_db
class TestSecretListPage:
    @pytest.mark.parametrize("persona", ["admin", "member", "viewer"])
    def test_every_member_sees_the_keys(self, workspace, admin, persona, request, client_for):
        secret_set(workspace=workspace, key="OPENAI_API_KEY", value="sk-abc", actor=admin)
        response = client_for(request.getfixturevalue(persona)).get(LIST)
        assert response.status_code == 200
        assert "OPENAI_API_KEY" in response.content.decode()
        assert ("Add a secret" in response.content.decode()) == (persona == "admin")

    def test_a_stranger_gets_404(self, workspace, stranger, client_for):
        assert client_for(stranger).get(LIST).status_code == 404

    def test_the_empty_state_says_what_to_do(self, workspace, admin, client_for):
        body = client_for(admin).get(LIST).content.decode()
        assert "No secrets yet" in body and "workspace-secret://OPENAI_API_KEY" in body

    def test_the_list_runs_a_fixed_number_of_queries(self, workspace, admin, client_for, django_assert_max_num_queries):
        for i in range(15):
            secret_set(workspace=workspace, key=f"K{i}", value="v", actor=admin)
        client = client_for(admin)
        client.get(LIST)
        with django_assert_max_num_queries(8):
            client.get(LIST)


@pytest.mark.django_db
class TestSecretSetPage:
    def test_an_admin_sets_a_secret_through_the_htmx_dialog(self, workspace, admin, client_for):
        response = client_for(admin).post(SET, {"key": "TOKEN", "value": "tok-value"}, HTTP_HX_REQUEST="true")
        assert response.status_code == 200 and response["HX-Redirect"] == LIST
        assert secrets_resolve_for_run(workspace=workspace) == {"TOKEN": "tok-value"}

    def test_errors_come_back_next_to_the_field_without_the_value(self, workspace, admin, client_for):
        response = client_for(admin).post(SET, {"key": "9bad", "value": "do-not-echo-me"}, HTTP_HX_REQUEST="true")
        body = response.content.decode()
        assert response.status_code == 200 and "HX-Redirect" not in response
        assert body.lstrip().startswith("<form") and 'class="field has-error"' in body
        assert "not starting with a digit" in body and "do-not-echo-me" not in body
        assert not WorkspaceSecret.objects.exists()

    def test_without_htmx_it_is_a_plain_form_page(self, workspace, admin, client_for):
        client = client_for(admin)
        assert "<h1>Add a secret</h1>" in client.get(SET).content.decode()
        response = client.post(SET, {"key": "K", "value": "v"})
        assert response.status_code == 302 and response["Location"] == LIST

    def test_the_htmx_get_returns_an_opening_dialog_with_the_key_filled_in(self, workspace, admin, client_for):
        body = client_for(admin).get(SET + "?key=TOKEN", HTTP_HX_REQUEST="true").content.decode()
        assert "<dialog" in body and "data-autoopen" in body and 'value="TOKEN"' in body

    def test_an_admin_sets_allowed_hosts_one_per_line(self, workspace, admin, client_for):
        data = {"key": "TOKEN", "value": "tok-value", "allowed_hosts": "API.example.com\r\n\r\n  *.example.org:443  \n"}
        response = client_for(admin).post(SET, data, HTTP_HX_REQUEST="true")
        assert response.status_code == 200 and response["HX-Redirect"] == LIST
        assert WorkspaceSecret.objects.get().allowed_hosts == ["api.example.com", "*.example.org:443"]
        body = client_for(admin).get(LIST).content.decode()
        assert "<code>api.example.com</code>" in body and "<code>*.example.org:443</code>" in body

    def test_the_edit_dialog_shows_the_hosts_and_keeps_the_value_when_left_blank(self, workspace, admin, client_for):
        secret_set(workspace=workspace, key="TOKEN", value="keep-me-value", allowed_hosts=["a.example.com"], actor=admin)
        client = client_for(admin)
        body = client.get(SET + "?key=TOKEN", HTTP_HX_REQUEST="true").content.decode()
        assert "Edit TOKEN" in body and "a.example.com</textarea>" in body and "keep-me-value" not in body
        assert "Leave blank to keep the current value" in body
        response = client.post(SET, {"key": "TOKEN", "value": "", "allowed_hosts": "b.example.com"}, HTTP_HX_REQUEST="true")
        assert response["HX-Redirect"] == LIST
        assert WorkspaceSecret.objects.get().allowed_hosts == ["b.example.com"]
        assert secrets_resolve_for_run(workspace=workspace) == {"TOKEN": "keep-me-value"}

    def test_the_edit_dialog_does_not_turn_a_changed_key_into_a_second_secret(self, workspace, admin, client_for):
        """Issue 25: editing the key in the Edit dialog silently created another secret."""
        secret_set(workspace=workspace, key="TOKEN", value="keep-me-value", actor=admin)
        client = client_for(admin)
        body = client.get(SET + "?key=TOKEN", HTTP_HX_REQUEST="true").content.decode()
        assert 'action="/w/acme/secrets/set/?key=TOKEN"' in body and "readonly" in body
        response = client.post(SET + "?key=TOKEN", {"key": "TOKEN_2", "value": "", "allowed_hosts": ""}, HTTP_HX_REQUEST="true")
        assert "a key cannot be renamed" in response.content.decode() and "HX-Redirect" not in response
        assert list(WorkspaceSecret.objects.values_list("key", flat=True)) == ["TOKEN"]

    def test_a_bad_host_is_an_error_next_to_the_field(self, workspace, admin, client_for):
        data = {"key": "TOKEN", "value": "do-not-echo-me", "allowed_hosts": "https://api.example.com/v1"}
        body = client_for(admin).post(SET, data, HTTP_HX_REQUEST="true").content.decode()
        assert "leave out the scheme" in body and "do-not-echo-me" not in body
        assert not WorkspaceSecret.objects.exists()

    def test_a_new_secret_still_needs_a_value(self, workspace, admin, client_for):
        body = client_for(admin).post(SET, {"key": "NEW", "value": "", "allowed_hosts": "a.example.com"}, HTTP_HX_REQUEST="true")
        assert "This field is required" in body.content.decode() and not WorkspaceSecret.objects.exists()

    def test_the_list_warns_about_secrets_tools_cannot_send(self, workspace, admin, member, client_for):
        secret_set(workspace=workspace, key="UNBOUND", value="v", actor=admin)
        body = client_for(member).get(LIST).content.decode()
        assert "tools cannot send it" in body
        assert 'style="' not in body.split("<main", 1)[-1] and "onclick" not in body and "onsubmit" not in body

    @pytest.mark.parametrize("persona", ["member", "viewer"])
    def test_lower_roles_get_403(self, workspace, persona, request, client_for):
        client = client_for(request.getfixturevalue(persona))
        assert client.get(SET).status_code == 403
        assert client.post(SET, {"key": "K", "value": "v"}).status_code == 403
        assert not WorkspaceSecret.objects.exists()

    def test_a_stranger_gets_404(self, workspace, stranger, client_for):
        assert client_for(stranger).post(SET, {"key": "K", "value": "v"}).status_code == 404


@pytest.mark.django_db
class TestSecretDeletePage:
    def test_an_admin_deletes(self, workspace, admin, client_for):
        secret_set(workspace=workspace, key="K", value="v", actor=admin)
        assert client_for(admin).post("/w/acme/secrets/K/delete/").status_code == 302
        assert not WorkspaceSecret.objects.exists()

    @pytest.mark.parametrize("persona", ["member", "viewer"])
    def test_lower_roles_get_403(self, workspace, admin, persona, request, client_for):
        secret_set(workspace=workspace, key="K", value="v", actor=admin)
        assert client_for(request.getfixturevalue(persona)).post("/w/acme/secrets/K/delete/").status_code == 403
        assert WorkspaceSecret.objects.exists()

    def test_a_stranger_gets_404(self, workspace, admin, stranger, client_for):
        secret_set(workspace=workspace, key="K", value="v", actor=admin)
        assert client_for(stranger).post("/w/acme/secrets/K/delete/").status_code == 404
        assert client_for(stranger).post("/w/globex/secrets/K/delete/").status_code == 404
        assert WorkspaceSecret.objects.exists()


@pytest.mark.django_db
class TestAuditPage:
    def test_an_admin_sees_who_changed_what(self, workspace, admin, client_for):
        secret_set(workspace=workspace, key="AUDITED_KEY", value="v", actor=admin)
        body = client_for(admin).get(AUDIT).content.decode()
        assert "secret.created" in body and "AUDITED_KEY" in body and "alice" in body

    def test_the_audit_log_shows_lists_as_words_not_python_reprs(self, workspace, admin, client_for):
        secret_set(workspace=workspace, key="HOSTED", value="v", allowed_hosts=["a.example.com", "b.example.org"], actor=admin)
        body = client_for(admin).get(AUDIT).content.decode()
        assert "allowed hosts</span> a.example.com, b.example.org" in body and "[&#x27;" not in body and "allowed_hosts" not in body

    def test_it_filters_by_action(self, workspace, admin, client_for):
        secret_set(workspace=workspace, key="K", value="v", actor=admin)
        AuditEvent.objects.create(workspace=workspace, action="member.added", target="zed-the-member")
        body = client_for(admin).get(AUDIT + "?action=secret.").content.decode()
        assert "secret.created" in body and "zed-the-member" not in body

    @pytest.mark.parametrize("persona", ["member", "viewer"])
    def test_lower_roles_get_403(self, workspace, persona, request, client_for):
        assert client_for(request.getfixturevalue(persona)).get(AUDIT).status_code == 403

    def test_a_stranger_gets_404(self, workspace, stranger, client_for):
        assert client_for(stranger).get(AUDIT).status_code == 404

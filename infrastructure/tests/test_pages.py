"""Infrastructure pages: three personas on every page, htmx dialogs, empty states, query counts."""

from __future__ import annotations

import json
from typing import Any

import pytest

from infrastructure import base_url as base_url_module
from infrastructure import services
from infrastructure.models import AgentDeployment, ProviderAccount, RuntimeProfile, ToolResource

W = "/w/acme"
SCRIPT = {"script": {"default": [{"submit": "42"}]}}


@pytest.fixture(autouse=True)
def public_dns(monkeypatch):
    monkeypatch.setattr(base_url_module, "system_resolver", lambda host, port: ["8.8.8.8"])


@pytest.fixture
def infra(workspace, admin):
    account = services.provider_account_create(workspace=workspace, name="Scripted", provider_key="scripted", actor=admin)
    profile = services.runtime_profile_create(workspace=workspace, name="Native", execution_target="native", actor=admin)
    deployment = services.deployment_create(
        workspace=workspace,
        name="Good agent",
        provider_account=account,
        model="m",
        runtime_profile=profile,
        deployment_config=SCRIPT,
        actor=admin,
    )
    tool = services.tool_resource_create(
        workspace=workspace, name="Fetch", tool_kind="primitive", capability_key="net.fetch", definition={"primitive": "http_request"}
    )
    return {"provider-accounts": account, "runtime-profiles": profile, "deployments": deployment, "tool-resources": tool}


def valid_post(collection: str, infra: dict) -> dict:
    payloads: dict[str, dict[str, Any]] = {
        "provider-accounts": {"name": "Second", "provider_key": "scripted", "status": "active"},
        "runtime-profiles": {
            "name": "Eval",
            "execution_target": "prompt_eval",
            "max_iterations": 1,
            "max_tool_calls": 0,
            "step_timeout_seconds": 30,
            "run_timeout_seconds": 60,
            "max_in_flight_cases": 4,
            "allow_shell": "unknown",
            "allow_network": "unknown",
        },
        "deployments": {
            "name": "Agent 2",
            "provider_account": infra["provider-accounts"].pk,
            "model": "m",
            "runtime_profile": infra["runtime-profiles"].pk,
            "deployment_config": json.dumps(SCRIPT),
            "output_schema": "",
        },
        "tool-resources": {
            "name": "Other",
            "tool_kind": "primitive",
            "capability_key": "files.read",
            "definition": "{}",
            "lifecycle_status": "active",
        },
    }
    return payloads[collection]


MODELS: dict[str, type[Any]] = {
    "provider-accounts": ProviderAccount,
    "runtime-profiles": RuntimeProfile,
    "deployments": AgentDeployment,
    "tool-resources": ToolResource,
}
WRITERS = [
    ("provider-accounts", "admin", "member"),
    ("runtime-profiles", "member", "viewer"),
    ("deployments", "member", "viewer"),
    ("tool-resources", "admin", "member"),
]


@pytest.mark.django_db
class TestListPages:
    @pytest.mark.parametrize("page", ["provider-accounts", "runtime-profiles", "deployments", "tool-resources", "primitives"])
    @pytest.mark.parametrize("persona", ["admin", "member", "viewer"])
    def test_every_member_sees_the_page(self, infra, page, persona, request, client_for):
        response = client_for(request.getfixturevalue(persona)).get(f"{W}/{page}/")
        assert response.status_code == 200
        if page != "primitives":
            assert infra[page].name in response.content.decode()

    @pytest.mark.parametrize("page", ["provider-accounts", "runtime-profiles", "deployments", "tool-resources", "primitives"])
    def test_a_stranger_gets_404(self, infra, page, stranger, client_for):
        assert client_for(stranger).get(f"{W}/{page}/").status_code == 404

    @pytest.mark.parametrize(("collection", "writer", "lower"), WRITERS)
    def test_only_writers_see_the_create_button(self, infra, collection, writer, lower, request, client_for):
        writer_page = client_for(request.getfixturevalue(writer)).get(f"{W}/{collection}/").content.decode()
        lower_page = client_for(request.getfixturevalue(lower)).get(f"{W}/{collection}/").content.decode()
        assert f'action="{W}/{collection}/new/"' in writer_page
        assert f"{W}/{collection}/new/" not in lower_page

    @pytest.mark.parametrize(
        ("page", "hint"),
        [
            ("provider-accounts", "No provider accounts yet"),
            ("runtime-profiles", "No runtime profiles yet"),
            ("deployments", "add a provider account"),
            ("tool-resources", "No tool resources yet"),
        ],
    )
    def test_empty_states_say_what_to_do_next(self, workspace, admin, client_for, page, hint):
        assert hint in client_for(admin).get(f"{W}/{page}/").content.decode()

    @pytest.mark.parametrize("page", ["provider-accounts", "runtime-profiles", "deployments", "tool-resources"])
    def test_list_pages_do_not_grow_queries_with_rows(self, infra, workspace, admin, client_for, page, django_assert_max_num_queries):
        for i in range(10):
            account = services.provider_account_create(workspace=workspace, name=f"A{i}", provider_key="scripted")
            profile = services.runtime_profile_create(workspace=workspace, name=f"P{i}", execution_target="native")
            services.deployment_create(
                workspace=workspace, name=f"D{i}", provider_account=account, model="m", runtime_profile=profile, deployment_config=SCRIPT
            )
            services.tool_resource_create(workspace=workspace, name=f"T{i}", tool_kind="primitive", capability_key="x")
        client = client_for(admin)
        client.get(f"{W}/{page}/")
        with django_assert_max_num_queries(10):
            assert client.get(f"{W}/{page}/").status_code == 200

    def test_the_primitive_catalogue_comes_from_the_engine_registry(self, workspace, viewer, client_for):
        from engine.tools.registry import catalogue

        body = client_for(viewer).get(f"{W}/primitives/").content.decode()
        for entry in catalogue():
            assert f'id="primitive-{entry["name"]}"' in body
        assert "accepts secrets" in body


@pytest.mark.django_db
class TestCreateEditArchivePages:
    @pytest.mark.parametrize(("collection", "writer", "lower"), WRITERS)
    def test_the_right_role_creates_through_the_htmx_dialog(self, infra, collection, writer, lower, request, client_for):
        response = client_for(request.getfixturevalue(writer)).post(
            f"{W}/{collection}/new/", valid_post(collection, infra), HTTP_HX_REQUEST="true"
        )
        assert response.status_code == 200, response.content.decode()[:2000]
        assert response["HX-Redirect"] == f"{W}/{collection}/"
        assert MODELS[collection].objects.filter(name=valid_post(collection, infra)["name"]).exists()

    @pytest.mark.parametrize(("collection", "writer", "lower"), WRITERS)
    def test_the_right_role_edits_and_archives(self, infra, collection, writer, lower, request, client_for):
        client = client_for(request.getfixturevalue(writer))
        obj = infra[collection]
        dialog = client.get(f"{W}/{collection}/{obj.pk}/edit/", HTTP_HX_REQUEST="true").content.decode()
        assert "<dialog" in dialog and "data-autoopen" in dialog and obj.name in dialog
        assert client.get(f"{W}/{collection}/{obj.pk}/edit/").status_code == 200  # plain page without htmx
        data = {**valid_post(collection, infra), "name": f"{obj.name} v2"}
        if collection == "tool-resources":
            data["slug"] = obj.slug
        response = client.post(f"{W}/{collection}/{obj.pk}/edit/", data)
        assert response.status_code == 302, response.content.decode()[:2000]
        obj.refresh_from_db()
        assert obj.name.endswith(" v2")
        assert client.post(f"{W}/{collection}/{obj.pk}/archive/").status_code == 302
        obj.refresh_from_db()
        assert (obj.lifecycle_status if collection == "tool-resources" else obj.status) == "archived"

    @pytest.mark.parametrize(("collection", "writer", "lower"), WRITERS)
    def test_a_lower_role_gets_403(self, infra, collection, writer, lower, request, client_for):
        client = client_for(request.getfixturevalue(lower))
        pk = infra[collection].pk
        assert client.get(f"{W}/{collection}/new/").status_code == 403
        assert client.post(f"{W}/{collection}/new/", valid_post(collection, infra)).status_code == 403
        assert client.get(f"{W}/{collection}/{pk}/edit/").status_code == 403
        assert client.post(f"{W}/{collection}/{pk}/archive/").status_code == 403
        assert MODELS[collection].objects.count() == 1

    @pytest.mark.parametrize("collection", list(MODELS))
    def test_a_stranger_gets_404(self, infra, collection, stranger, client_for):
        client = client_for(stranger)
        pk = infra[collection].pk
        assert client.post(f"{W}/{collection}/new/", valid_post(collection, infra)).status_code == 404
        assert client.get(f"{W}/{collection}/{pk}/edit/").status_code == 404
        assert client.post(f"{W}/{collection}/{pk}/archive/").status_code == 404
        # another workspace's id through the stranger's own workspace
        assert client.get(f"/w/globex/{collection}/{pk}/edit/").status_code == 404
        assert client.post(f"/w/globex/{collection}/{pk}/archive/").status_code == 404

    def test_test_connection_personas(self, infra, admin, member, stranger, client_for):
        pk = infra["provider-accounts"].pk
        assert client_for(member).post(f"{W}/provider-accounts/{pk}/test/").status_code == 403
        assert client_for(stranger).post(f"{W}/provider-accounts/{pk}/test/").status_code == 404
        response = client_for(admin).post(f"{W}/provider-accounts/{pk}/test/", follow=True)
        assert "always available" in response.content.decode()

    def test_errors_are_rendered_next_to_their_fields(self, infra, admin, client_for):
        data = {**valid_post("deployments", infra), "deployment_config": json.dumps({"script": {"default": [{"tool": ""}]}})}
        body = client_for(admin).post(f"{W}/deployments/new/", data, HTTP_HX_REQUEST="true").content.decode()
        assert body.lstrip().startswith('<form id="deployment-form"')
        assert "deployment_config.script.default[0].tool: must be the tool&#x27;s name" in body
        data = {**valid_post("provider-accounts", infra), "name": "Scripted"}
        body = client_for(admin).post(f"{W}/provider-accounts/new/", data, HTTP_HX_REQUEST="true").content.decode()
        assert 'class="field has-error"' in body and "already has a provider account" in body

    def test_invalid_json_says_where_and_an_empty_schema_stays_empty(self, infra, admin, client_for):
        """Issue 25: "Enter a valid JSON." without a position, and the empty output schema refilled with null."""
        data = {**valid_post("deployments", infra), "deployment_config": '{\n  "script": [1, 2,]\n}', "output_schema": ""}
        body = client_for(admin).post(f"{W}/deployments/new/", data, HTTP_HX_REQUEST="true").content.decode()
        assert "Not valid JSON: expecting value at line 2, column 19." in body
        schema = body.split('name="output_schema"')[1].split("</textarea>")[0]
        assert "null" not in schema

    def test_an_api_key_typed_in_the_form_is_never_shown_back(self, workspace, admin, client_for):
        data = {"name": "OpenAI", "provider_key": "openai", "api_key": "sk-typed-in-form-99", "base_url": "http://plain.example.org"}
        body = client_for(admin).post(f"{W}/provider-accounts/new/", data, HTTP_HX_REQUEST="true").content.decode()
        assert "https://" in body and "sk-typed-in-form-99" not in body
        response = client_for(admin).post(f"{W}/provider-accounts/new/", {**data, "base_url": ""}, HTTP_HX_REQUEST="true")
        assert response["HX-Redirect"] == f"{W}/provider-accounts/"
        page = client_for(admin).get(f"{W}/provider-accounts/").content.decode()
        assert "workspace-secret://OPENAI_OPENAI_API_KEY" in page and "sk-typed-in-form-99" not in page

    def test_the_deployment_form_offers_only_this_workspaces_accounts(self, infra, other_workspace, admin, client_for):
        foreign = services.provider_account_create(workspace=other_workspace, name="Foreign account", provider_key="scripted")
        body = client_for(admin).get(f"{W}/deployments/new/").content.decode()
        assert "Foreign account" not in body
        data = {**valid_post("deployments", infra), "provider_account": foreign.pk}
        body = client_for(admin).post(f"{W}/deployments/new/", data, HTTP_HX_REQUEST="true").content.decode()
        assert "Select a valid choice" in body
        assert AgentDeployment.objects.count() == 1

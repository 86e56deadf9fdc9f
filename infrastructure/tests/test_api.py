"""Infrastructure API: every endpoint with the right role, a lower role (403) and a stranger (404)."""

from __future__ import annotations

from typing import Any

import pytest

from infrastructure import base_url as base_url_module
from infrastructure import services
from infrastructure.models import AgentDeployment, ProviderAccount, RuntimeProfile, ToolResource
from workspaces.models import AuditEvent

API = "/api/v1/workspaces/acme"
SCRIPT = {"script": {"default": [{"submit": "42"}]}}
COMPOSED = {
    "name": "read_config",
    "description": "Read a config file",
    "parameters": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"], "additionalProperties": False},
    "implementation": {"primitive": "read_file", "args": {"path": "config/${name}"}},
}


@pytest.fixture(autouse=True)
def public_dns(monkeypatch):
    """No test resolves real names: every host 'resolves' to a public documentation-free address."""
    monkeypatch.setattr(base_url_module, "system_resolver", lambda host, port: ["8.8.8.8"])


@pytest.fixture
def infra(workspace, admin):
    account = services.provider_account_create(workspace=workspace, name="Scripted", provider_key="scripted", actor=admin)
    profile = services.runtime_profile_create(workspace=workspace, name="Native", execution_target="native", actor=admin)
    deployment = services.deployment_create(
        workspace=workspace,
        name="Agent",
        provider_account=account,
        model="m",
        runtime_profile=profile,
        deployment_config=SCRIPT,
        actor=admin,
    )
    tool = services.tool_resource_create(
        workspace=workspace, name="Read config", tool_kind="composed", capability_key="files.read", definition=COMPOSED, actor=admin
    )
    return {"provider-accounts": account, "runtime-profiles": profile, "deployments": deployment, "tool-resources": tool}


def create_payload(collection: str, infra: dict) -> dict:
    payloads: dict[str, dict[str, Any]] = {
        "provider-accounts": {"name": "New scripted", "provider_key": "scripted"},
        "runtime-profiles": {"name": "Eval", "execution_target": "prompt_eval", "max_iterations": 1},
        "deployments": {
            "name": "Agent 2",
            "provider_account_id": infra["provider-accounts"].pk,
            "model": "m",
            "runtime_profile_id": infra["runtime-profiles"].pk,
            "deployment_config": SCRIPT,
        },
        "tool-resources": {
            "name": "Fetch",
            "tool_kind": "primitive",
            "capability_key": "net.fetch",
            "definition": {"primitive": "http_request"},
        },
    }
    return payloads[collection]


PATCHES: dict[str, dict[str, Any]] = {
    "provider-accounts": {"name": "Renamed"},
    "runtime-profiles": {"max_iterations": 3},
    "deployments": {"model": "m2"},
    "tool-resources": {"capability_key": "files.read2"},
}
# (collection, the lowest role that may write, a persona whose role is one lower)
WRITERS = [
    ("provider-accounts", "admin", "member"),
    ("runtime-profiles", "member", "viewer"),
    ("deployments", "member", "viewer"),
    ("tool-resources", "admin", "member"),
]
MODELS: dict[str, type[Any]] = {
    "provider-accounts": ProviderAccount,
    "runtime-profiles": RuntimeProfile,
    "deployments": AgentDeployment,
    "tool-resources": ToolResource,
}


@pytest.mark.django_db
class TestEveryCollection:
    @pytest.mark.parametrize("collection", list(MODELS))
    @pytest.mark.parametrize("persona", ["admin", "member", "viewer"])
    def test_every_member_reads_list_and_detail(self, infra, collection, persona, request, api_client_for):
        client = api_client_for(request.getfixturevalue(persona))
        listing = client.get(f"{API}/{collection}")
        assert listing.status_code == 200
        assert [item["id"] for item in listing.json()["results"]] == [infra[collection].pk]
        detail = client.get(f"{API}/{collection}/{infra[collection].pk}")
        assert detail.status_code == 200 and detail.json()["name"] == infra[collection].name

    @pytest.mark.parametrize("collection", list(MODELS))
    def test_a_stranger_gets_404_everywhere(self, infra, collection, stranger, api_client_for):
        client = api_client_for(stranger)
        pk = infra[collection].pk
        assert client.get(f"{API}/{collection}").status_code == 404
        assert client.get(f"{API}/{collection}/{pk}").status_code == 404
        assert client.post(f"{API}/{collection}", create_payload(collection, infra), format="json").status_code == 404
        assert client.patch(f"{API}/{collection}/{pk}", PATCHES[collection], format="json").status_code == 404
        assert client.post(f"{API}/{collection}/{pk}/archive").status_code == 404
        # …and through the stranger's own workspace, the id does not exist.
        assert client.get(f"/api/v1/workspaces/globex/{collection}/{pk}").status_code == 404
        assert client.patch(f"/api/v1/workspaces/globex/{collection}/{pk}", PATCHES[collection], format="json").status_code == 404
        assert client.post(f"/api/v1/workspaces/globex/{collection}/{pk}/archive").status_code == 404

    @pytest.mark.parametrize(("collection", "writer", "lower"), WRITERS)
    def test_the_right_role_creates_updates_and_archives(self, infra, collection, writer, lower, request, api_client_for):
        client = api_client_for(request.getfixturevalue(writer))
        created = client.post(f"{API}/{collection}", create_payload(collection, infra), format="json")
        assert created.status_code == 201, created.json()
        pk = created.json()["id"]
        model = MODELS[collection]
        assert model.objects.filter(pk=pk, workspace=infra[collection].workspace).exists()
        patched = client.patch(f"{API}/{collection}/{pk}", PATCHES[collection], format="json")
        assert patched.status_code == 200, patched.json()
        field, value = next(iter(PATCHES[collection].items()))
        assert getattr(model.objects.get(pk=pk), field) == value
        archived = client.post(f"{API}/{collection}/{pk}/archive")
        assert archived.status_code == 200
        status_field = "lifecycle_status" if collection == "tool-resources" else "status"
        assert archived.json()[status_field] == "archived"
        assert [i["id"] for i in client.get(f"{API}/{collection}").json()["results"]] == [infra[collection].pk]
        assert pk in [i["id"] for i in client.get(f"{API}/{collection}?include_archived=1").json()["results"]]
        prefix = {
            "provider-accounts": "provider_account",
            "runtime-profiles": "runtime_profile",
            "deployments": "deployment",
            "tool-resources": "tool_resource",
        }[collection]
        actions = set(AuditEvent.objects.filter(action__startswith=prefix + ".").values_list("action", flat=True))
        assert {f"{prefix}.created", f"{prefix}.updated", f"{prefix}.archived"} <= actions

    @pytest.mark.parametrize(("collection", "writer", "lower"), WRITERS)
    def test_a_lower_role_gets_403_on_writes(self, infra, collection, writer, lower, request, api_client_for):
        client = api_client_for(request.getfixturevalue(lower))
        pk = infra[collection].pk
        before = MODELS[collection].objects.count()
        assert client.post(f"{API}/{collection}", create_payload(collection, infra), format="json").status_code == 403
        assert client.patch(f"{API}/{collection}/{pk}", PATCHES[collection], format="json").status_code == 403
        assert client.post(f"{API}/{collection}/{pk}/archive").status_code == 403
        assert MODELS[collection].objects.count() == before
        assert infra[collection].__class__.objects.get(pk=pk).name == infra[collection].name

    @pytest.mark.parametrize("collection", list(MODELS))
    def test_a_name_clash_is_a_field_error(self, infra, collection, request, api_client_for, admin):
        payload = {**create_payload(collection, infra), "name": infra[collection].name}
        if collection == "tool-resources":
            payload["slug"] = infra[collection].slug
        response = api_client_for(admin).post(f"{API}/{collection}", payload, format="json")
        assert response.status_code == 400
        assert set(response.json()["error"]["fields"]) & {"name", "slug"}


@pytest.mark.django_db
class TestProviderAccountApi:
    def test_an_api_key_becomes_a_workspace_secret_and_is_never_echoed(self, workspace, admin, api_client_for):
        from secrets_app.services import secrets_resolve_for_run

        response = api_client_for(admin).post(
            f"{API}/provider-accounts",
            {"name": "OpenAI main", "provider_key": "openai", "api_key": "sk-test-not-echoed-123"},
            format="json",
        )
        assert response.status_code == 201
        body = response.json()
        assert "sk-test-not-echoed-123" not in response.content.decode() and "api_key" not in body
        assert body["credential_reference"] == "workspace-secret://OPENAI_OPENAI_MAIN_API_KEY"
        assert secrets_resolve_for_run(workspace=workspace) == {"OPENAI_OPENAI_MAIN_API_KEY": "sk-test-not-echoed-123"}
        # a second account with the same derived name gets its own secret
        again = api_client_for(admin).post(
            f"{API}/provider-accounts", {"name": "OpenAI-main", "provider_key": "openai", "api_key": "sk-2"}, format="json"
        )
        assert again.json()["credential_reference"] == "workspace-secret://OPENAI_OPENAI_MAIN_API_KEY_2"
        # replacing the key of the first account replaces its own secret
        api_client_for(admin).patch(f"{API}/provider-accounts/{body['id']}", {"api_key": "sk-rotated"}, format="json")
        assert secrets_resolve_for_run(workspace=workspace)["OPENAI_OPENAI_MAIN_API_KEY"] == "sk-rotated"

    def test_a_failed_create_does_not_leave_a_secret_behind(self, workspace, admin, api_client_for):
        from secrets_app.models import WorkspaceSecret

        response = api_client_for(admin).post(
            f"{API}/provider-accounts",
            {"name": "Bad", "provider_key": "openai", "api_key": "sk-x", "base_url": "http://insecure.example.org"},
            format="json",
        )
        assert response.status_code == 400 and "base_url" in response.json()["error"]["fields"]
        assert not WorkspaceSecret.objects.exists() and not ProviderAccount.objects.exists()

    @pytest.mark.parametrize(
        "reference", ["env://OPENAI_API_KEY", "secret://x", "workspace-secret://1BAD", "workspace-secret://", "OPENAI_API_KEY"]
    )
    def test_it_accepts_only_workspace_secret_references(self, workspace, admin, api_client_for, reference):
        response = api_client_for(admin).post(
            f"{API}/provider-accounts", {"name": "A", "provider_key": "openai", "credential_reference": reference}, format="json"
        )
        assert response.status_code == 400 and "credential_reference" in response.json()["error"]["fields"]

    @pytest.mark.parametrize(
        "url", ["https://localhost/v1", "https://10.0.0.1/v1", "https://metadata.google.internal", "https://x.com/v1?key=1"]
    )
    def test_it_rejects_unsafe_base_urls(self, workspace, admin, api_client_for, url):
        response = api_client_for(admin).post(
            f"{API}/provider-accounts", {"name": "A", "provider_key": "openai", "base_url": url}, format="json"
        )
        assert response.status_code == 400 and "base_url" in response.json()["error"]["fields"]

    def test_it_rejects_a_host_that_resolves_to_a_private_address(self, workspace, admin, api_client_for, monkeypatch):
        monkeypatch.setattr(base_url_module, "system_resolver", lambda host, port: ["8.8.8.8", "192.168.1.10"])
        response = api_client_for(admin).post(
            f"{API}/provider-accounts", {"name": "A", "provider_key": "openai", "base_url": "https://rebind.example.org/v1"}, format="json"
        )
        assert response.status_code == 400
        assert "192.168" not in response.content.decode()

    def test_it_accepts_a_public_base_url(self, workspace, admin, api_client_for):
        response = api_client_for(admin).post(
            f"{API}/provider-accounts", {"name": "vLLM", "provider_key": "openai", "base_url": "https://llm.example.org/v1/"}, format="json"
        )
        assert response.status_code == 201 and response.json()["base_url"] == "https://llm.example.org/v1"

    def test_test_connection_for_scripted_always_succeeds(self, infra, admin, api_client_for):
        pk = infra["provider-accounts"].pk
        response = api_client_for(admin).post(f"{API}/provider-accounts/{pk}/test-connection")
        assert response.status_code == 200 and response.json()["ok"] is True
        assert ProviderAccount.objects.get(pk=pk).last_test_status == "ok"

    def test_test_connection_roles(self, infra, member, stranger, api_client_for):
        pk = infra["provider-accounts"].pk
        assert api_client_for(member).post(f"{API}/provider-accounts/{pk}/test-connection").status_code == 403
        assert api_client_for(stranger).post(f"{API}/provider-accounts/{pk}/test-connection").status_code == 404


@pytest.mark.django_db
class TestDeploymentApi:
    def test_another_workspaces_provider_account_or_profile_is_404(self, infra, other_workspace, admin, api_client_for):
        foreign_account = services.provider_account_create(workspace=other_workspace, name="Theirs", provider_key="scripted")
        foreign_profile = services.runtime_profile_create(workspace=other_workspace, name="Theirs", execution_target="native")
        client = api_client_for(admin)
        base = create_payload("deployments", infra)
        assert client.post(f"{API}/deployments", {**base, "provider_account_id": foreign_account.pk}, format="json").status_code == 404
        assert client.post(f"{API}/deployments", {**base, "runtime_profile_id": foreign_profile.pk}, format="json").status_code == 404
        pk = infra["deployments"].pk
        assert client.patch(f"{API}/deployments/{pk}", {"provider_account_id": foreign_account.pk}, format="json").status_code == 404
        assert client.patch(f"{API}/deployments/{pk}", {"runtime_profile_id": foreign_profile.pk}, format="json").status_code == 404
        assert client.post(f"{API}/deployments", {**base, "provider_account_id": 999999}, format="json").status_code == 404
        assert AgentDeployment.objects.count() == 1
        assert AgentDeployment.objects.get(pk=pk).provider_account == infra["provider-accounts"]

    def test_an_archived_account_cannot_be_chosen(self, infra, admin, api_client_for):
        services.provider_account_archive(account=infra["provider-accounts"])
        response = api_client_for(admin).post(f"{API}/deployments", create_payload("deployments", infra), format="json")
        assert response.status_code == 400 and "provider_account" in response.json()["error"]["fields"]

    @pytest.mark.parametrize(
        ("config", "path"),
        [
            ({}, "deployment_config.script"),
            ({"script": []}, "deployment_config.script"),
            ({"script": {"default": [{"tool": "read_file", "args": "x"}]}}, "deployment_config.script.default[0].args"),
            ({"script": {"cases": {"port-typo": [{"submit": "a"}, {"bogus": 1}]}}}, "deployment_config.script.cases.port-typo[1]"),
            ({"script": {"default": [{"tools": [{"tool": ""}]}]}}, "deployment_config.script.default[0].tools[0].tool"),
            ({"script": {"default": [{"submit": "a", "text": "b"}]}}, "exactly one of"),
            ({"script_mix": [{"weight": -1, "script": {"default": []}}]}, "deployment_config.script_mix[0].weight"),
            ({"script_mix": [{"weight": 1, "script": {"default": []}}], "seed": "x"}, "deployment_config.seed"),
        ],
    )
    def test_a_scripted_deployment_config_is_validated_with_field_paths(self, infra, admin, api_client_for, config, path):
        response = api_client_for(admin).post(
            f"{API}/deployments", {**create_payload("deployments", infra), "deployment_config": config}, format="json"
        )
        assert response.status_code == 400
        messages = response.json()["error"]["fields"]["deployment_config"]
        assert any(path in message for message in messages), messages

    def test_non_scripted_configs_are_free_json_objects(self, infra, workspace, admin, api_client_for):
        account = services.provider_account_create(workspace=workspace, name="OpenAI", provider_key="openai")
        payload = {**create_payload("deployments", infra), "provider_account_id": account.pk, "deployment_config": {"temperature": 0.2}}
        assert api_client_for(admin).post(f"{API}/deployments", payload, format="json").status_code == 201
        payload = {**payload, "name": "x", "deployment_config": [1, 2]}
        assert api_client_for(admin).post(f"{API}/deployments", payload, format="json").status_code == 400


@pytest.mark.django_db
class TestToolResourceApi:
    def test_a_composed_definition_is_validated_like_a_pack_tool(self, workspace, admin, api_client_for):
        bad = {**COMPOSED, "implementation": {"primitive": "read_file", "args": {"path": "config/${missing}"}}}
        response = api_client_for(admin).post(
            f"{API}/tool-resources",
            {"name": "Bad", "tool_kind": "composed", "capability_key": "files.read", "definition": bad},
            format="json",
        )
        assert response.status_code == 400
        messages = response.json()["error"]["fields"]["definition"]
        assert any(message.startswith("definition") for message in messages), messages

    def test_an_unknown_primitive_is_rejected(self, workspace, admin, api_client_for):
        response = api_client_for(admin).post(
            f"{API}/tool-resources",
            {"name": "X", "tool_kind": "primitive", "capability_key": "x", "definition": {"primitive": "teleport"}},
            format="json",
        )
        assert response.status_code == 400 and "teleport" in response.json()["error"]["fields"]["definition"][0]

    def test_the_slug_is_derived_from_the_name(self, workspace, admin, api_client_for):
        response = api_client_for(admin).post(
            f"{API}/tool-resources",
            {"name": "Read Config Files", "tool_kind": "composed", "capability_key": "f", "definition": COMPOSED},
            format="json",
        )
        assert response.status_code == 201 and response.json()["slug"] == "read-config-files"


@pytest.mark.django_db
class TestPrimitiveCatalogueApi:
    def test_any_authenticated_user_reads_the_engine_catalogue(self, stranger, api_client_for):
        from engine.tools.registry import catalogue

        response = api_client_for(stranger).get("/api/v1/primitives")
        assert response.status_code == 200
        body = response.json()
        assert [p["name"] for p in body] == [p["name"] for p in catalogue()]
        http = next(p for p in body if p["name"] == "http_request")
        assert http["accepts_secrets"] is True and http["kind"] == "network" and http["parameters"]["type"] == "object"
        assert next(p for p in body if p["name"] == "read_file")["accepts_secrets"] is False

    def test_anonymous_users_get_401(self, db, api_client_for):
        assert api_client_for(None).get("/api/v1/primitives").status_code == 401


@pytest.mark.django_db
def test_the_openapi_schema_lists_the_infrastructure_paths(admin, api_client_for):
    response = api_client_for(admin).get("/api/schema/", HTTP_ACCEPT="application/json")
    assert response.status_code == 200
    text = response.content.decode()
    for path in [
        "/api/v1/workspaces/{workspace_slug}/provider-accounts",
        "/api/v1/workspaces/{workspace_slug}/provider-accounts/{id}/test-connection",
        "/api/v1/workspaces/{workspace_slug}/runtime-profiles/{id}/archive",
        "/api/v1/workspaces/{workspace_slug}/deployments/{id}",
        "/api/v1/workspaces/{workspace_slug}/tool-resources",
        "/api/v1/workspaces/{workspace_slug}/secrets/{key}",
        "/api/v1/primitives",
    ]:
        assert path in text, path

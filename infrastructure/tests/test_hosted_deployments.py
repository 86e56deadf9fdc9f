"""Hosted external agents' deployments (docs/hosted-agents.md): the endpoint URL follows the
provider base-URL rules, through the API, the page form and the admin."""

from __future__ import annotations

import json

import pytest

from infrastructure import base_url as base_url_module
from infrastructure import services
from infrastructure.models import AgentDeployment
from workspaces.tests.factories import make_user

pytestmark = pytest.mark.django_db
W = "/w/acme"
API = "/api/v1/workspaces/acme"


@pytest.fixture(autouse=True)
def dns(monkeypatch):
    answers = {"agent.example.org": ["8.8.8.8"], "rebound.example.org": ["10.0.0.7"]}
    monkeypatch.setattr(base_url_module, "system_resolver", lambda host, port: answers.get(host, ["8.8.8.8"]))


@pytest.fixture
def refs(workspace):
    account = services.provider_account_create(workspace=workspace, name="Labels", provider_key="scripted")
    hosted = services.runtime_profile_create(workspace=workspace, name="Hosted", execution_target="hosted_external")
    native = services.runtime_profile_create(workspace=workspace, name="Native", execution_target="native")
    return {"account": account, "hosted": hosted, "native": native}


def body(refs, profile: str = "hosted", **extra):
    return {
        "name": "Team agent",
        "provider_account_id": refs["account"].pk,
        "model": "team-v1",
        "runtime_profile_id": refs[profile].pk,
        **extra,
    }


def test_a_hosted_deployment_is_created_with_its_https_endpoint(api_client_for, member, refs):
    response = api_client_for(member).post(f"{API}/deployments", body(refs, endpoint_url="https://agent.example.org/case"), format="json")
    assert response.status_code == 201, response.content
    assert response.json()["endpoint_url"] == "https://agent.example.org/case"
    assert response.json()["execution_target"] == "hosted_external"
    assert AgentDeployment.objects.get(name="Team agent").endpoint_url == "https://agent.example.org/case"


@pytest.mark.parametrize(
    ("url", "words"),
    [
        ("", "needs the HTTPS endpoint"),
        ("http://agent.example.org/case", "https://"),
        ("https://127.0.0.1/case", "private, local or reserved"),
        ("https://rebound.example.org/case", "resolves to a private"),
        ("https://localhost/case", "local or special-use"),
        ("https://user:pw@agent.example.org/case", "credentials"),
    ],
)
def test_it_refuses_an_endpoint_the_base_url_rules_refuse(api_client_for, member, refs, url, words):
    response = api_client_for(member).post(f"{API}/deployments", body(refs, endpoint_url=url), format="json")
    assert response.status_code == 400
    assert words in response.json()["error"]["fields"]["endpoint_url"][0]
    assert not AgentDeployment.objects.exists()


def test_the_operator_setting_allows_a_loopback_endpoint(api_client_for, member, refs, settings):
    settings.ALLOW_PRIVATE_PROVIDER_URLS = True
    response = api_client_for(member).post(f"{API}/deployments", body(refs, endpoint_url="http://127.0.0.1:8765/case"), format="json")
    assert response.status_code == 201, response.content


def test_a_native_deployment_has_no_endpoint(api_client_for, member, refs):
    response = api_client_for(member).post(
        f"{API}/deployments", body(refs, "native", endpoint_url="https://agent.example.org/case"), format="json"
    )
    assert response.status_code == 400
    assert "hosted external runtime profile" in response.json()["error"]["fields"]["endpoint_url"][0]


def test_switching_a_hosted_deployment_to_a_native_profile_needs_the_endpoint_cleared(api_client_for, member, refs):
    client = api_client_for(member)
    pk = client.post(f"{API}/deployments", body(refs, endpoint_url="https://agent.example.org/case"), format="json").json()["id"]
    refused = client.patch(f"{API}/deployments/{pk}", {"runtime_profile_id": refs["native"].pk}, format="json")
    assert refused.status_code == 400 and "endpoint_url" in refused.json()["error"]["fields"]


def test_personas(api_client_for, viewer, stranger, refs):
    assert (
        api_client_for(viewer).post(f"{API}/deployments", body(refs, endpoint_url="https://agent.example.org/c"), format="json").status_code
        == 403
    )
    assert (
        api_client_for(stranger)
        .post(f"{API}/deployments", body(refs, endpoint_url="https://agent.example.org/c"), format="json")
        .status_code
        == 404
    )


def test_the_page_form_takes_and_checks_the_endpoint(client_for, admin, refs):
    data = {"name": "Team agent", "provider_account": refs["account"].pk, "model": "team-v1", "runtime_profile": refs["hosted"].pk}
    page = client_for(admin).get(f"{W}/deployments/new/").content.decode()
    assert 'name="endpoint_url"' in page and "Hosted external" in page
    refused = client_for(admin).post(f"{W}/deployments/new/", {**data, "endpoint_url": "http://agent.example.org/"}, HTTP_HX_REQUEST="true")
    assert "https://" in refused.content.decode() and not AgentDeployment.objects.exists()
    saved = client_for(admin).post(f"{W}/deployments/new/", {**data, "endpoint_url": "https://agent.example.org/"}, HTTP_HX_REQUEST="true")
    assert saved["HX-Redirect"] == f"{W}/deployments/"
    assert AgentDeployment.objects.get().endpoint_url == "https://agent.example.org/"


def test_the_admin_checks_the_endpoint_too(client_for, workspace, refs):
    root = make_user("root", is_staff=True, is_superuser=True)
    data = {
        "workspace": workspace.pk, "name": "Via admin", "provider_account": refs["account"].pk, "model": "m",
        "runtime_profile": refs["hosted"].pk, "system_prompt": "", "output_schema": "null", "status": "active",
        "deployment_config": json.dumps({}), "endpoint_url": "https://127.0.0.1/case",
    }  # fmt: skip
    response = client_for(root).post("/admin/infrastructure/agentdeployment/add/", data)
    assert response.status_code == 200 and "private, local or reserved" in response.content.decode()
    response = client_for(root).post(
        "/admin/infrastructure/agentdeployment/add/", {**data, "endpoint_url": "https://agent.example.org/case"}
    )
    assert response.status_code == 302
    assert AgentDeployment.objects.get(name="Via admin").endpoint_url == "https://agent.example.org/case"

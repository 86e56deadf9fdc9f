"""The workspace's default judge deployment, and scripted deployments that only judge or simulate."""

from __future__ import annotations

import pytest

from infrastructure import base_url as base_url_module
from infrastructure import services
from infrastructure.models import AgentDeployment
from infrastructure.scripted_config import scripted_config_errors
from infrastructure.tests.test_api import API, create_payload

pytestmark = pytest.mark.django_db

JUDGE_ONLY = {"replies": [{"purpose": "judge", "about": "Rubric", "when": ["good"], "reply": {"score": 5}}, {"reply": "{}"}]}


@pytest.fixture(autouse=True)
def public_dns(monkeypatch):
    monkeypatch.setattr(base_url_module, "system_resolver", lambda host, port: ["8.8.8.8"])


@pytest.fixture
def infra(workspace, admin):
    account = services.provider_account_create(workspace=workspace, name="Scripted", provider_key="scripted", actor=admin)
    profile = services.runtime_profile_create(workspace=workspace, name="Native", execution_target="native", actor=admin)
    return {"provider-accounts": account, "runtime-profiles": profile}


def test_choosing_a_default_judge_unsets_the_previous_one(infra, member, api_client_for):
    client = api_client_for(member)
    payload = {**create_payload("deployments", infra), "deployment_config": JUDGE_ONLY}
    first = client.post(f"{API}/deployments", {**payload, "name": "Judge 1", "is_default_judge": True}, format="json")
    assert first.status_code == 201 and first.json()["is_default_judge"] is True
    second = client.post(f"{API}/deployments", {**payload, "name": "Judge 2"}, format="json").json()
    changed = client.patch(f"{API}/deployments/{second['id']}", {"is_default_judge": True}, format="json")
    assert changed.status_code == 200 and changed.json()["is_default_judge"] is True
    assert list(AgentDeployment.objects.filter(is_default_judge=True).values_list("name", flat=True)) == ["Judge 2"]


def test_a_viewer_cannot_choose_the_default_judge(infra, admin, viewer, api_client_for):
    payload = {**create_payload("deployments", infra), "deployment_config": JUDGE_ONLY}
    pk = api_client_for(admin).post(f"{API}/deployments", payload, format="json").json()["id"]
    assert api_client_for(viewer).patch(f"{API}/deployments/{pk}", {"is_default_judge": True}, format="json").status_code == 403
    assert not AgentDeployment.objects.filter(is_default_judge=True).exists()


def test_a_stranger_cannot_see_or_change_the_default_judge(infra, admin, stranger, api_client_for):
    payload = {**create_payload("deployments", infra), "deployment_config": JUDGE_ONLY}
    pk = api_client_for(admin).post(f"{API}/deployments", payload, format="json").json()["id"]
    assert api_client_for(stranger).patch(f"{API}/deployments/{pk}", {"is_default_judge": True}, format="json").status_code == 404


def test_the_deployments_page_marks_the_default_judge(infra, workspace, admin, client_for):
    services.deployment_create(
        workspace=workspace,
        name="House judge",
        provider_account=infra["provider-accounts"],
        model="judge",
        runtime_profile=infra["runtime-profiles"],
        deployment_config=JUDGE_ONLY,
        is_default_judge=True,
        actor=admin,
    )
    html = client_for(admin).get("/w/acme/deployments/").content.decode()
    assert "House judge" in html and "Default judge" in html


@pytest.mark.parametrize(
    ("config", "problem"),
    [
        ({"replies": "x"}, "deployment_config.replies: must be a list"),
        ({"replies": [{"when": ["a"]}]}, "deployment_config.replies[0].reply: is required"),
        ({"replies": [{"reply": "a", "when": 3}]}, "deployment_config.replies[0].when: must be a string or a list of strings"),
        ({"replies": [{"reply": "a", "bogus": 1}]}, "unknown field(s) bogus"),
    ],
)
def test_scripted_replies_are_validated(config, problem):
    assert any(problem in error for error in scripted_config_errors(config)), scripted_config_errors(config)


def test_a_scripted_deployment_may_only_judge_or_simulate():
    assert scripted_config_errors(JUDGE_ONLY) == []
    assert scripted_config_errors({"judge_responses": "{}"}) == []

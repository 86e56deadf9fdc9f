from __future__ import annotations

import json

import pytest

from infrastructure import services
from infrastructure.models import AgentDeployment, ProviderAccount
from workspaces.models import AuditEvent
from workspaces.tests.factories import make_user


@pytest.fixture
def root(db):
    return make_user("root", is_staff=True, is_superuser=True)


@pytest.mark.django_db
@pytest.mark.parametrize("model", ["provideraccount", "runtimeprofile", "agentdeployment", "toolresource"])
def test_operators_see_every_infra_admin_page(workspace, admin, root, client_for, model):
    account = services.provider_account_create(workspace=workspace, name="S", provider_key="scripted")
    profile = services.runtime_profile_create(workspace=workspace, name="P", execution_target="native")
    deployment = services.deployment_create(
        workspace=workspace,
        name="D",
        provider_account=account,
        model="m",
        runtime_profile=profile,
        deployment_config={"script": {"default": []}},
    )
    tool = services.tool_resource_create(workspace=workspace, name="T", tool_kind="primitive", capability_key="x")
    pk = {"provideraccount": account, "runtimeprofile": profile, "agentdeployment": deployment, "toolresource": tool}[model].pk
    client = client_for(root)
    for url in [f"/admin/infrastructure/{model}/", f"/admin/infrastructure/{model}/add/", f"/admin/infrastructure/{model}/{pk}/change/"]:
        assert client.get(url).status_code == 200, url


@pytest.mark.django_db
def test_the_admin_applies_the_scripted_config_rules_and_audits_saves(workspace, root, client_for):
    account = services.provider_account_create(workspace=workspace, name="S", provider_key="scripted")
    profile = services.runtime_profile_create(workspace=workspace, name="P", execution_target="native")
    data = {
        "workspace": workspace.pk, "name": "Via admin", "provider_account": account.pk, "model": "m", "runtime_profile": profile.pk,
        "system_prompt": "", "output_schema": "null", "status": "active", "deployment_config": json.dumps({"script": {"default": [{"oops": 1}]}}),
    }  # fmt: skip
    response = client_for(root).post("/admin/infrastructure/agentdeployment/add/", data)
    assert response.status_code == 200 and "deployment_config.script.default[0]" in response.content.decode()
    data["deployment_config"] = json.dumps({"script": {"default": [{"submit": "ok"}]}})
    response = client_for(root).post("/admin/infrastructure/agentdeployment/add/", data)
    assert response.status_code == 302
    assert AgentDeployment.objects.filter(name="Via admin").exists()
    assert AuditEvent.objects.filter(action="deployment.created", target="Via admin", actor=root).exists()


@pytest.mark.django_db
def test_the_admin_refuses_a_private_base_url(workspace, root, client_for):
    data = {
        "workspace": workspace.pk,
        "name": "X",
        "provider_key": "openai",
        "credential_reference": "",
        "base_url": "https://127.0.0.1/v1",
        "status": "active",
    }
    response = client_for(root).post("/admin/infrastructure/provideraccount/add/", data)
    assert response.status_code == 200 and "private" in response.content.decode()


def _judge_form(workspace, account, profile, name: str, **overrides) -> dict:
    data = {
        "workspace": workspace.pk, "name": name, "provider_account": account.pk, "model": "judge", "runtime_profile": profile.pk,
        "system_prompt": "", "output_schema": "null", "deployment_config": json.dumps({"judge_responses": "{}"}),
        "endpoint_url": "", "is_default_judge": "on", "status": "active",
    }  # fmt: skip
    return {**data, **overrides}


@pytest.mark.django_db
def test_an_operator_choosing_a_second_default_judge_demotes_the_first_like_the_service(workspace, root, client_for):
    account = services.provider_account_create(workspace=workspace, name="S", provider_key="scripted")
    profile = services.runtime_profile_create(workspace=workspace, name="P", execution_target="native")
    client = client_for(root)
    first = client.post("/admin/infrastructure/agentdeployment/add/", _judge_form(workspace, account, profile, "Judge 1"))
    assert first.status_code == 302, first.content.decode()[:2000]
    second = client.post("/admin/infrastructure/agentdeployment/add/", _judge_form(workspace, account, profile, "Judge 2"))
    assert second.status_code == 302, second.content.decode()[:2000]
    assert list(AgentDeployment.objects.filter(is_default_judge=True).values_list("name", flat=True)) == ["Judge 2"]
    judge_1 = AgentDeployment.objects.get(name="Judge 1")
    change = client.post(f"/admin/infrastructure/agentdeployment/{judge_1.pk}/change/", _judge_form(workspace, account, profile, "Judge 1"))
    assert change.status_code == 302, change.content.decode()[:2000]
    assert list(AgentDeployment.objects.filter(is_default_judge=True).values_list("name", flat=True)) == ["Judge 1"]
    assert AuditEvent.objects.filter(
        action="deployment.updated", target="Judge 1", actor=root, metadata__fields=["is_default_judge"]
    ).exists()


@pytest.mark.django_db
def test_a_service_refusal_is_a_form_error_and_nothing_is_saved(workspace, root, client_for):
    account = services.provider_account_create(workspace=workspace, name="Taken", provider_key="scripted")
    data = {"workspace": workspace.pk, "name": "Taken", "provider_key": "scripted", "credential_reference": "", "base_url": ""}
    response = client_for(root).post("/admin/infrastructure/provideraccount/add/", data)
    body = response.content.decode()
    assert response.status_code == 200 and "already has a provider account" in body and "errorlist" in body
    assert list(ProviderAccount.objects.values_list("pk", flat=True)) == [account.pk]
    change = {**data, "provider_key": "openai", "base_url": "https://10.0.0.1/v1", "status": "active"}
    response = client_for(root).post(f"/admin/infrastructure/provideraccount/{account.pk}/change/", change)
    assert response.status_code == 200 and "private" in response.content.decode()
    account.refresh_from_db()
    assert (account.provider_key, account.base_url) == ("scripted", "")
    assert not AuditEvent.objects.filter(action="provider_account.updated").exists()

"""``agentclash apply FILE`` against a live server: declared provider accounts, runtime profiles and
deployments are created or updated by name, idempotently, with credentials only as references."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from infrastructure.models import AgentDeployment, ProviderAccount, RuntimeProfile
from infrastructure.services import deployment_archive
from secrets_app.services import secret_set
from workspaces.models import AuditEvent
from workspaces.services import api_token_create

pytestmark = pytest.mark.django_db(transaction=True)

SCRIPT: dict[str, Any] = {"script": {"default": [{"submit": "ok"}]}}
DECLARED: dict[str, Any] = {
    "version": 1,
    "provider_accounts": [
        {"name": "OpenAI", "provider_key": "openai", "credential_reference": "workspace-secret://OPENAI_API_KEY", "requests_per_minute": 60},
        {"name": "Offline", "provider_key": "scripted"},
    ],
    "runtime_profiles": [{"name": "Native", "execution_target": "native", "max_iterations": 6}],
    "deployments": [
        {"name": "Candidate", "provider_account": "Offline", "runtime_profile": "Native", "model": "scripted-1",
         "system_prompt": "Be careful.\n", "deployment_config": SCRIPT},
        {"name": "House judge", "provider_account": "OpenAI", "runtime_profile": "Native", "model": "gpt-4.1", "is_default_judge": True},
    ],
}  # fmt: skip


@pytest.fixture
def as_admin(server, admin, workspace, monkeypatch):
    _, raw = api_token_create(user=admin, name="laptop")
    monkeypatch.setenv("AGENTCLASH_TOKEN", raw)
    secret_set(workspace=workspace, key="OPENAI_API_KEY", value="sk-test", actor=admin)


def write(tmp_path: Path, doc: dict, name: str = "infra.yaml") -> str:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return str(path)


def test_apply_creates_everything_then_changes_nothing(cli, as_admin, workspace, tmp_path):
    first = cli("apply", write(tmp_path, DECLARED))
    assert first.code == 0, first
    assert [line.split("  ")[0] for line in first.out.splitlines()[1:]] == ["provider account"] * 2 + ["runtime profile"] + [
        "deployment"
    ] * 2
    assert all(" created " in line for line in first.out.splitlines()[1:])
    account = ProviderAccount.objects.get(workspace=workspace, name="OpenAI")
    assert (account.credential_reference, account.requests_per_minute) == ("workspace-secret://OPENAI_API_KEY", 60)
    candidate = AgentDeployment.objects.get(workspace=workspace, name="Candidate")
    assert (candidate.provider_account.name, candidate.runtime_profile.name, candidate.system_prompt) == (
        "Offline",
        "Native",
        "Be careful.\n",
    )
    assert candidate.deployment_config == SCRIPT
    assert AgentDeployment.objects.get(name="House judge").is_default_judge
    assert RuntimeProfile.objects.get(workspace=workspace, name="Native").max_iterations == 6

    audits, stamps = AuditEvent.objects.count(), sorted(AgentDeployment.objects.values_list("updated_at", flat=True))
    again = cli("apply", write(tmp_path, DECLARED), "--format", "json")
    assert again.code == 0, again
    body = json.loads(again.out)
    assert {c["action"] for c in body["changes"]} == {"unchanged"}
    assert [c["id"] for c in body["changes"] if c["name"] == "Candidate"] == [candidate.pk]
    assert AuditEvent.objects.count() == audits, "nothing was written"
    assert sorted(AgentDeployment.objects.values_list("updated_at", flat=True)) == stamps


def test_apply_changes_only_the_fields_that_differ(cli, as_admin, workspace, tmp_path):
    assert cli("apply", write(tmp_path, DECLARED)).code == 0
    changed = copy.deepcopy(DECLARED)
    changed["deployments"][0]["model"] = "scripted-2"
    changed["runtime_profiles"].append({"name": "Prompt", "execution_target": "prompt_eval"})
    changed["deployments"][0]["runtime_profile"] = "Prompt"
    result = cli("apply", write(tmp_path, changed), "--format", "json")
    assert result.code == 0, result
    actions = {(c["kind"], c["name"]): (c["action"], c["fields"]) for c in json.loads(result.out)["changes"]}
    assert actions[("deployment", "Candidate")] == ("updated", ["model", "runtime_profile"])
    assert actions[("runtime profile", "Prompt")][0] == "created"
    assert actions[("provider account", "OpenAI")] == ("unchanged", [])
    candidate = AgentDeployment.objects.get(workspace=workspace, name="Candidate")
    assert (candidate.model, candidate.runtime_profile.name, candidate.system_prompt) == ("scripted-2", "Prompt", "Be careful.\n")
    fields = AuditEvent.objects.filter(action="deployment.updated", target="Candidate").get().metadata["fields"]
    assert sorted(fields) == ["model", "runtime_profile"]


def test_dry_run_says_what_would_change_and_writes_nothing(cli, as_admin, tmp_path):
    result = cli("apply", write(tmp_path, DECLARED), "--dry-run", "--format", "json")
    assert result.code == 0, result
    body = json.loads(result.out)
    assert body["dry_run"] is True
    assert {c["action"] for c in body["changes"]} == {"create"}
    assert not ProviderAccount.objects.exists() and not AgentDeployment.objects.exists()


def broken(path: str, value) -> dict:
    doc = copy.deepcopy(DECLARED)
    section, index, field = path.split(".")
    doc[section][int(index)][field] = value
    return doc


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        (broken("provider_accounts.0.api_key", "sk-plain"), "provider_accounts[0].api_key: apply never sends a credential"),
        (broken("provider_accounts.0.credential_reference", "sk-plain"),
         "provider_accounts[0].credential_reference must be workspace-secret://KEY"),
        (broken("provider_accounts.0.credential_reference", "workspace-secret://MISSING"),
         "provider_accounts[0].credential_reference: workspace secret MISSING does not exist in 'acme'; set it first: agentclash secret set MISSING"),
        (broken("deployments.1.runtime_profile", "Nowhere"), "deployments[1].runtime_profile: no runtime profile named 'Nowhere'"),
        (broken("deployments.0.modle", "x"), "deployments[0].modle is not a known field"),
        (broken("deployments.1.name", "Candidate"), "deployments: 'Candidate' is declared twice"),
        (broken("runtime_profiles.0.execution_target", None), "runtime_profiles[0].execution_target is required"),
        ({**DECLARED, "tool_resources": []}, "tool_resources is not a known field"),
        (broken("runtime_profiles.0.max_iterations", 0), "runtime_profiles[0].max_iterations: Ensure this value is greater than or equal to 1."),
        (broken("runtime_profiles.0.execution_target", "warp"), 'runtime_profiles[0].execution_target: "warp" is not a valid choice.'),
    ],
)  # fmt: skip
def test_a_bad_file_is_refused_naming_the_field(cli, as_admin, tmp_path, doc, message):
    result = cli("apply", write(tmp_path, doc))
    assert result.code == 4, result
    assert message in result.err
    assert not AgentDeployment.objects.exists()
    assert "sk-plain" not in result.err


def test_an_archived_name_is_refused(cli, as_admin, workspace, admin, tmp_path):
    assert cli("apply", write(tmp_path, DECLARED)).code == 0
    deployment_archive(deployment=AgentDeployment.objects.get(name="Candidate"), actor=admin)
    result = cli("apply", write(tmp_path, DECLARED))
    assert result.code == 4
    assert "deployments[0].name: the deployment 'Candidate' exists but is archived; rename it in the file" in result.err


def test_a_member_can_apply_deployments_but_not_provider_accounts(cli, workspace, admin, tmp_path):
    secret_set(workspace=workspace, key="OPENAI_API_KEY", value="sk-test", actor=admin)
    result = cli("apply", write(tmp_path, DECLARED))
    assert result.code == 4
    assert "provider_accounts[0]: " in result.err and "HTTP 403" in result.err
    assert not ProviderAccount.objects.exists()
    only_runtime = {"runtime_profiles": DECLARED["runtime_profiles"]}
    assert cli("apply", write(tmp_path, only_runtime)).code == 0
    assert RuntimeProfile.objects.filter(workspace=workspace, name="Native").exists()

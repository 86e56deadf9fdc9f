"""Pre-flight at run creation (issue 26): what would fail every case is a 400 naming the field and
what to do — a workspace secret a tool sends that is missing or not bound to the tool's host, a
sandbox template this installation does not define, a package the operator refuses or apt does
not know — and a pack whose ``additional_packages`` are installable runs a command from them in a
real sandbox."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile

import pytest
from django.urls import reverse

from engine.events import TOOL_CALL_COMPLETED
from engine.tests.sandbox.test_packages import _apt_usable
from engine.tests.tools.support import requires_bwrap
from infrastructure.services import sandbox_template_create
from runs import services
from runs.models import CaseRun, CaseStatus, Run, RunEvent
from runs.services.resolve import RunCreateError
from runs.tests.factories import make_deployment, native_pack_yaml, publish
from secrets_app.services import secret_set

BASE = "/api/v1/workspaces/acme/runs"

SECRET_TOOL = """tools:
  custom:
    - name: vault
      description: Reads from the vault.
      parameters: {type: object, properties: {path: {type: string}}, required: [path]}
      implementation:
        primitive: http_request
        args:
          method: GET
          url: "https://vault.example.com/v1/${path}"
          headers:
            X-Vault-Token: "${secrets.VAULT_TOKEN}"
challenges:"""


def secret_pack(workspace, admin):
    source = native_pack_yaml(cases=1).replace("allowed_tool_kinds: [file]", "allowed_tool_kinds: [file, network]")
    return publish(workspace, admin, source.replace("challenges:", SECRET_TOOL, 1))


def sandbox_pack(workspace, admin, sandbox: str, *, shell: bool = False):
    source = native_pack_yaml(cases=1, extra_version=f"  sandbox:\n{sandbox}")
    if shell:
        source = source.replace("allowed_tool_kinds: [file]", "allowed_tool_kinds: [file]\n    allow_shell: true")
    return publish(workspace, admin, source)


def create(workspace, admin, version, deployment):
    return services.run_create(workspace=workspace, user=admin, pack_version=version, deployment_ids=[deployment.pk])


@pytest.mark.django_db
def test_a_missing_workspace_secret_is_refused_at_run_creation_through_the_api(api_client_for, member, workspace, admin):
    version = secret_pack(workspace, admin)
    deployment = make_deployment(workspace)
    response = api_client_for(member).post(BASE, {"pack_version_id": version.pk, "deployment_ids": [deployment.pk]}, format="json")
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "secret_missing"
    assert "pack_version_id" in error["fields"]
    assert "VAULT_TOKEN" in error["message"] and 'Tool "vault"' in error["message"] and "add it" in error["message"]
    assert not Run.objects.exists()


@pytest.mark.django_db
def test_a_secret_not_bound_to_the_tools_host_is_refused_and_a_bound_one_runs(workspace, admin):
    version = secret_pack(workspace, admin)
    deployment = make_deployment(workspace)
    secret_set(workspace=workspace, key="VAULT_TOKEN", value="s3cret-value-1", allowed_hosts=["other.example.com"], actor=admin)
    with pytest.raises(RunCreateError) as refused:
        create(workspace, admin, version, deployment)
    assert refused.value.code == "secret_host_not_allowed" and refused.value.field == "pack_version_id"
    assert "vault.example.com:443" in refused.value.message and "allowed hosts" in refused.value.message
    secret_set(workspace=workspace, key="VAULT_TOKEN", value="s3cret-value-1", allowed_hosts=[], actor=admin)
    with pytest.raises(RunCreateError):
        create(workspace, admin, version, deployment)
    secret_set(workspace=workspace, key="VAULT_TOKEN", value="s3cret-value-1", allowed_hosts=["*.example.com"], actor=admin)
    assert create(workspace, admin, version, deployment).pk


@pytest.mark.django_db
def test_an_unknown_sandbox_template_is_a_publish_warning_and_a_run_creation_error_until_an_operator_adds_it(workspace, admin):
    version = sandbox_pack(workspace, admin, "    sandbox_template_id: data-science")
    warnings = [w for w in (version.warnings or []) if w["path"] == "version.sandbox.sandbox_template_id"]
    assert warnings and '"data-science" is not a sandbox template of this installation' in warnings[0]["message"]
    assert warnings[0]["line"]
    deployment = make_deployment(workspace)
    with pytest.raises(RunCreateError) as refused:
        create(workspace, admin, version, deployment)
    assert refused.value.code == "sandbox_template_unknown" and "data-science" in refused.value.message
    sandbox_template_create(template_id="data-science", name="Data science")
    assert create(workspace, admin, version, deployment).pk
    again = sandbox_pack(workspace, admin, "    sandbox_template_id: data-science")
    assert not [w for w in (again.warnings or []) if w["path"] == "version.sandbox.sandbox_template_id"]


@pytest.mark.django_db
def test_a_template_path_missing_on_this_host_is_refused(workspace, admin):
    sandbox_template_create(template_id="tools", name="Tools", read_only_paths=["/opt/agentclash-test-missing/tools"])
    version = sandbox_pack(workspace, admin, "    sandbox_template_id: tools")
    with pytest.raises(RunCreateError) as refused:
        create(workspace, admin, version, make_deployment(workspace))
    assert refused.value.code == "sandbox_unavailable" and "/opt/agentclash-test-missing/tools" in refused.value.message


@pytest.mark.django_db
def test_a_denied_package_is_refused_naming_it(workspace, admin, settings):
    settings.SANDBOX_PACKAGES_DENY = ["tree"]
    version = sandbox_pack(workspace, admin, "    additional_packages: [jq, tree]")
    with pytest.raises(RunCreateError) as refused:
        create(workspace, admin, version, make_deployment(workspace))
    assert refused.value.code == "package_unavailable" and refused.value.extra["package"] == "tree"
    assert "denylist" in refused.value.message and "additional_packages" in refused.value.message


@pytest.mark.django_db
def test_a_template_package_outside_the_allowlist_is_refused_naming_it(workspace, admin, settings):
    settings.SANDBOX_PACKAGES_ALLOW = ["jq"]
    sandbox_template_create(template_id="viewer", name="Viewer", packages=["tree"])
    version = sandbox_pack(workspace, admin, "    sandbox_template_id: viewer")
    with pytest.raises(RunCreateError) as refused:
        create(workspace, admin, version, make_deployment(workspace))
    assert refused.value.extra["package"] == "tree" and "allowlist" in refused.value.message


@pytest.mark.skipif(bool(_apt_usable()), reason=_apt_usable() or "apt usable")
@pytest.mark.django_db
def test_a_package_apt_does_not_know_is_refused_naming_it(api_client_for, member, workspace, admin):
    version = sandbox_pack(workspace, admin, "    additional_packages: [tree, agentclash-no-such-package]")
    deployment = make_deployment(workspace)
    response = api_client_for(member).post(BASE, {"pack_version_id": version.pk, "deployment_ids": [deployment.pk]}, format="json")
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "package_unavailable" and "agentclash-no-such-package" in error["message"]
    assert not Run.objects.exists()


@pytest.fixture
def package_cache(settings):
    directory = tempfile.mkdtemp(prefix="agentclash-packages-")  # the sandbox's uid must search it
    os.chmod(directory, 0o755)
    settings.SANDBOX_PACKAGES_CACHE_DIR = directory
    yield directory
    subprocess.run(["chmod", "-R", "u+w", directory], check=False)
    shutil.rmtree(directory, ignore_errors=True)


@requires_bwrap
@pytest.mark.skipif(bool(_apt_usable(download=True)), reason=_apt_usable(download=True) or "mirror reachable")
@pytest.mark.django_db
def test_a_pack_with_additional_packages_runs_a_command_from_them_in_a_real_sandbox(workspace, admin, tasks, package_cache):
    version = sandbox_pack(workspace, admin, "    additional_packages: [tree]", shell=True)
    script = [{"tool": "exec", "args": {"command": ["tree", "/workspace"]}}, {"submit": "done"}]
    run = create(workspace, admin, version, make_deployment(workspace, script=script))
    tasks.drain()
    case = CaseRun.objects.get(run=run)
    assert case.status == CaseStatus.COMPLETED, case.error
    [result] = [e.payload for e in RunEvent.objects.filter(run=run, event_type=TOOL_CALL_COMPLETED) if "exec" in json.dumps(e.payload)][:1]
    text = json.dumps(result)
    assert result["tool_name"] == "exec" and result["result"]["is_error"] is False
    assert "notes.txt" in text and "directories," in text and "command not found" not in text
    assert any(name.startswith("layer-") for name in os.listdir(package_cache))


@pytest.mark.django_db
def test_the_new_run_page_shows_a_preflight_refusal_next_to_the_pack_version(workspace, admin, member, client_for):
    version = secret_pack(workspace, admin)
    deployment = make_deployment(workspace)
    response = client_for(member).post(
        reverse("runs:create", args=["acme"]),
        {"pack_version_id": version.pk, "input_set_id": version.input_sets.get().pk, "deployment_ids": [deployment.pk]},
    )
    assert response.status_code in (200, 400)
    assert "VAULT_TOKEN" in response.content.decode() and "this workspace does not have" in response.content.decode()
    assert response.context["form"].errors["pack_version_id"]
    assert not Run.objects.exists()

"""``agentclash secret list | set KEY | delete KEY`` against a live server: values go in, never out."""

from __future__ import annotations

import io
import json

import pytest

from secrets_app.models import WorkspaceSecret
from secrets_app.services import secret_set, secrets_resolve_for_run
from workspaces.services import api_token_create

pytestmark = pytest.mark.django_db(transaction=True)

VALUE = "sk-live-0123456789abcdef"


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.fixture
def as_admin(server, admin, monkeypatch):
    _, raw = api_token_create(user=admin, name="laptop")
    monkeypatch.setenv("AGENTCLASH_TOKEN", raw)


def piped(monkeypatch, text: str) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO(text))


def test_set_reads_the_value_from_standard_input_and_never_prints_it(cli, as_admin, workspace, monkeypatch):
    piped(monkeypatch, VALUE + "\n")
    created = cli("secret", "set", "OPENAI_API_KEY", "--allowed-host", "api.openai.com:443")
    assert created.code == 0, created
    assert created.out == "secret OPENAI_API_KEY created (allowed hosts: api.openai.com:443)\n"
    assert secrets_resolve_for_run(workspace=workspace) == {"OPENAI_API_KEY": VALUE}, "one trailing line break is dropped"

    piped(monkeypatch, "rotated\r\n")
    updated = cli("secret", "set", "OPENAI_API_KEY", "--format", "json")
    assert updated.code == 0, updated
    body = json.loads(updated.out)
    assert (body["key"], body["created"], body["allowed_hosts"]) == ("OPENAI_API_KEY", False, ["api.openai.com:443"]), "hosts kept"
    assert "value" not in body
    assert secrets_resolve_for_run(workspace=workspace) == {"OPENAI_API_KEY": "rotated"}
    for result in (created, updated):
        assert VALUE not in result.out + result.err and "rotated" not in result.out + result.err


def test_set_asks_with_a_hidden_prompt_on_a_terminal(cli, as_admin, workspace, monkeypatch):
    prompts: list[str] = []

    def hidden(prompt: str) -> str:
        prompts.append(prompt)
        return "typed-value"

    monkeypatch.setattr("sys.stdin", Terminal())
    monkeypatch.setattr("getpass.getpass", hidden)
    result = cli("secret", "set", "VAULT_TOKEN")
    assert result.code == 0, result
    assert prompts == ["Value for VAULT_TOKEN (hidden): "]
    assert secrets_resolve_for_run(workspace=workspace) == {"VAULT_TOKEN": "typed-value"}


def test_a_value_on_the_command_line_is_refused_and_not_echoed(cli, as_admin, monkeypatch):
    piped(monkeypatch, "from-stdin\n")
    for args in (["OPENAI_API_KEY", VALUE], ["OPENAI_API_KEY", f"--value={VALUE}"]):
        result = cli("secret", "set", *args)
        assert result.code == 4, result
        assert "never takes the value on the command line" in result.err
        assert VALUE not in result.out + result.err
    assert not WorkspaceSecret.objects.exists()


@pytest.mark.parametrize(
    ("key", "stdin", "message"),
    [
        ("OPENAI_API_KEY", "", "no value for OPENAI_API_KEY"),
        ("OPENAI_API_KEY", "\n", "no value for OPENAI_API_KEY"),
        ("9LIVES", "x", "KEY must be letters, digits and _"),
        ("OPENAI_API_KEY", "x" * (64 * 1024 + 1), "larger than 64 KiB"),
    ],
)
def test_set_refuses_bad_input_naming_it(cli, as_admin, monkeypatch, key, stdin, message):
    piped(monkeypatch, stdin)
    result = cli("secret", "set", key)
    assert result.code == 4, result
    assert message in result.err
    assert not WorkspaceSecret.objects.exists()


def test_list_shows_keys_and_hosts_never_values(cli, as_admin, workspace, admin):
    empty = cli("secret", "list")
    assert empty.code == 0 and empty.out == "no secrets in 'acme' (add one: agentclash secret set KEY)\n"
    secret_set(workspace=workspace, key="OPENAI_API_KEY", value=VALUE, allowed_hosts=["api.openai.com"], actor=admin)
    secret_set(workspace=workspace, key="VAULT_TOKEN", value="hvs.other", actor=admin)
    text = cli("secret", "list")
    assert text.code == 0, text
    lines = text.out.splitlines()
    assert lines[0].split() == ["key", "allowed", "hosts", "updated", "by"]
    assert lines[1].startswith("OPENAI_API_KEY  api.openai.com") and lines[1].endswith(admin.username)
    assert lines[2].startswith("VAULT_TOKEN     —")
    as_json = cli("secret", "list", "--format", "json")
    assert [(s["key"], s["allowed_hosts"]) for s in json.loads(as_json.out)] == [
        ("OPENAI_API_KEY", ["api.openai.com"]),
        ("VAULT_TOKEN", []),
    ]
    for result in (text, as_json):
        assert VALUE not in result.out and "hvs.other" not in result.out


def test_delete_removes_it_and_a_missing_key_is_a_usage_error(cli, as_admin, workspace, admin):
    secret_set(workspace=workspace, key="OLD_TOKEN", value="x", actor=admin)
    deleted = cli("secret", "delete", "OLD_TOKEN", "--format", "json")
    assert deleted.code == 0, deleted
    assert json.loads(deleted.out) == {"deleted": True, "key": "OLD_TOKEN"}
    assert not WorkspaceSecret.objects.exists()
    again = cli("secret", "delete", "OLD_TOKEN", "--format", "json")
    assert again.code == 4
    assert "no secret OLD_TOKEN in 'acme'" in again.err
    assert json.loads(again.out)["error"]["exit_code"] == 4


def test_a_member_may_list_but_not_set_or_delete(cli, workspace, admin, monkeypatch):
    secret_set(workspace=workspace, key="KEEP", value="kept", actor=admin)
    assert cli("secret", "list").code == 0
    piped(monkeypatch, "new\n")
    refused = cli("secret", "set", "KEEP")
    assert refused.code == 4
    assert "secret set needs the admin role in 'acme'" in refused.err
    assert cli("secret", "delete", "KEEP").code == 4
    assert secrets_resolve_for_run(workspace=workspace) == {"KEEP": "kept"}


def test_another_workspaces_secrets_are_out_of_reach(cli, as_admin, other_workspace, monkeypatch):
    result = cli("secret", "list", "--workspace", other_workspace.slug)
    assert result.code == 4
    assert "HTTP 404" in result.err
    piped(monkeypatch, "x\n")
    assert cli("secret", "set", "K", "--workspace", other_workspace.slug).code == 4
    assert not WorkspaceSecret.objects.exists()

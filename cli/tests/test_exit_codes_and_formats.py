"""One usage exit code (4) for every command, ``--format json`` (errors included), and the exit-code
table in cli/README.md and docs/ci.md saying the same. No server is needed for any of these."""

from __future__ import annotations

import json
import re

import pytest
from agentclash_cli.main import EPILOG

from .live import REPO
from .test_run_gate_ci import write_manifest


@pytest.mark.parametrize(
    "args",
    [
        [],
        ["packs"],
        ["packs", "validate"],
        ["packs", "publish", "a.yaml", "b.yaml"],
        ["run", "--pack", "demo"],
        ["gate", "--baseline", "x", "--candidate", "1"],
        ["gate", "--baseline", "1", "--candidate", "2", "--bogus"],
        ["ci"],
        ["ci", "run", "--format", "xml"],
        ["secret"],
        ["secret", "delete"],
        ["apply"],
        ["nonsense"],
    ],
)
def test_every_usage_error_exits_4(offline_cli, args):
    assert offline_cli(*args).code == 4


def test_an_unknown_argument_is_named_except_after_secret(offline_cli):
    assert "unrecognized arguments: --bogus" in offline_cli("gate", "--baseline", "1", "--candidate", "2", "--bogus").err
    hidden = offline_cli("secret", "list", "hunter2")
    assert hidden.code == 4 and "hunter2" not in hidden.err


def test_ci_validate_speaks_json_before_or_after_the_command(offline_cli, tmp_path):
    manifest = str(write_manifest(tmp_path))
    for args in (
        ["--format", "json", "ci", "validate", "--config", manifest],
        ["ci", "validate", "--config", manifest, "--format", "json"],
    ):
        result = offline_cli(*args)
        assert result.code == 0, result
        assert json.loads(result.out) == {"file": manifest, "valid": True}


def test_an_error_in_json_is_a_json_document_on_stdout_too(offline_cli, tmp_path):
    manifest = str(write_manifest(tmp_path, baseline={"run": 1, "deployment": "x"}))
    result = offline_cli("ci", "validate", "--config", manifest, "--format", "json")
    assert result.code == 4
    assert json.loads(result.out) == {"error": {"message": "ci.yaml: baseline needs exactly one of run or deployment", "exit_code": 4}}
    assert "agentclash: error: ci.yaml: baseline needs exactly one of run or deployment" in result.err
    text = offline_cli("ci", "validate", "--config", manifest)
    assert text.out == "" and text.code == 4


def test_packs_validate_of_an_unreadable_file_is_exit_4_in_json_too(offline_cli, tmp_path):
    result = offline_cli("packs", "validate", "--url", "http://127.0.0.1:9", str(tmp_path / "missing.yaml"), "--json")
    assert result.code == 4
    assert json.loads(result.out)["error"]["message"].endswith("missing.yaml: cannot read file: No such file or directory")


def test_apply_checks_the_file_before_it_needs_a_server(offline_cli, tmp_path):
    bad = tmp_path / "infra.yaml"
    bad.write_text("deployments:\n  - name: x\n    api_key: sk-1\n")
    result = offline_cli("apply", str(bad))
    assert result.code == 4
    assert "deployments[0].api_key: apply never sends a credential" in result.err
    assert "sk-1" not in result.err


def exit_rows(text: str) -> dict[str, str]:
    """``| `agentclash CMD …` | codes |`` rows of a Markdown table, by command."""
    rows = re.findall(r"^\| `agentclash ([a-z]+(?: [a-z]+)?)[^`]*` \| (.+) \|$", text, flags=re.MULTILINE)
    return dict(rows)


def test_the_documented_exit_codes_agree():
    docs = exit_rows((REPO / "docs" / "ci.md").read_text())
    readme = exit_rows((REPO / "cli" / "README.md").read_text())
    commands = {
        "packs validate",
        "packs publish",
        "run",
        "gate",
        "ci run",
        "ci validate",
        "secret list",
        "secret set",
        "secret delete",
        "apply",
    }
    assert set(docs) == set(readme) == commands
    assert docs == readme
    for command, codes in docs.items():
        assert "4 usage" in codes, command
        assert "2 usage" not in codes, command
    assert "exit codes: 4 is a usage or setup error for every command" in EPILOG

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from packs.models import PackVersion
from packs.tests.factories import CORPUS_FILES, EXAMPLE_FILES, bundle_yaml, warned_bundle_yaml

RUFF = EXAMPLE_FILES[0].parent / "cli-smoke-ruff.yaml"
ROOT = Path(__file__).resolve().parents[2]


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, capture_output=True, text=True, timeout=120)


def test_validate_pack_exits_0_and_says_valid_for_every_corpus_pack(capsys):
    call_command("validate_pack", *[str(p) for p in CORPUS_FILES])
    out = capsys.readouterr().out.splitlines()
    verdicts = [line for line in out if not line.startswith("  ")]
    assert [line.split(" (", 1)[0] for line in verdicts] == [f"{p}: valid" for p in CORPUS_FILES]
    assert all(line.startswith("  warning: ") for line in out if line.startswith("  "))


def test_validate_pack_exits_1_and_lists_errors_with_lines(tmp_path, capsys):
    valid, broken = tmp_path / "valid.yaml", tmp_path / "broken.yaml"
    valid.write_text(bundle_yaml())
    source = bundle_yaml().replace("difficulty: easy", "difficulty: trivial")
    broken.write_text(source)
    with pytest.raises(SystemExit) as exited:
        call_command("validate_pack", str(valid), str(broken))
    assert exited.value.code == 1
    out = capsys.readouterr().out.splitlines()
    line = source.splitlines().index("    difficulty: trivial") + 1
    assert out[0] == f"{valid}: valid"
    assert out[1] == f"{broken}: invalid"
    assert out[2].startswith("  challenges[0].difficulty ")
    assert out[2].endswith(f"(line {line})")


def test_validate_pack_json_prints_one_object_per_file(tmp_path, capsys):
    valid = tmp_path / "valid.yaml"
    valid.write_text(bundle_yaml())
    with pytest.raises(SystemExit) as exited:
        call_command("validate_pack", str(RUFF), str(valid), "--json")
    assert exited.value.code == 1
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert lines[0]["file"] == str(RUFF)
    assert lines[0]["valid"] is False
    assert lines[0]["errors"][0]["line"] == 5
    assert set(lines[0]["errors"][0]) == {"field", "message", "line"}
    assert lines[1] == {"file": str(valid), "valid": True, "errors": [], "warnings": []}


def test_validate_pack_json_lists_warnings_with_path_message_and_line(tmp_path, capsys):
    path = tmp_path / "warned.yaml"
    source = warned_bundle_yaml()
    path.write_text(source)
    call_command("validate_pack", str(path), "--json")  # warnings never change the exit code: no SystemExit
    line = json.loads(capsys.readouterr().out)
    assert line["valid"] is True
    assert line["errors"] == []
    lines = source.splitlines()
    assert line["warnings"] == [
        {"path": "version.tools", "message": line["warnings"][0]["message"], "line": lines.index("  tools:") + 1},
        {
            "path": "version.tools.custom[0].implementation",
            "message": 'mock tool "ping" has no response: every call returns the generic mock result '
            '{"status": "ok", "mock": true, "tool": "ping", "arguments": {…}}',
            "line": lines.index("        implementation: {type: mock}") + 1,
        },
    ]
    assert line["warnings"][0]["message"].startswith("is read as the pack's tools")


def test_validate_pack_prints_warnings_after_the_verdict_and_exits_0(tmp_path, capsys):
    path = tmp_path / "warned.yaml"
    path.write_text(warned_bundle_yaml())
    call_command("validate_pack", str(path))
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"{path}: valid (2 warnings)"
    assert out[1].startswith("  warning: version.tools is read as the pack's tools")
    assert out[1].endswith("(line 9)")
    assert out[2].startswith('  warning: version.tools.custom[0].implementation mock tool "ping" has no response')


def test_validate_pack_prints_warnings_of_an_invalid_bundle_after_its_errors(tmp_path, capsys):
    path = tmp_path / "broken.yaml"
    path.write_text(warned_bundle_yaml().replace("difficulty: easy", "difficulty: trivial"))
    with pytest.raises(SystemExit) as exited:
        call_command("validate_pack", str(path))
    assert exited.value.code == 1
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"{path}: invalid (2 warnings)"
    assert out[1].startswith("  challenges[0].difficulty ")
    assert [line.split(" ", 4)[3] for line in out[2:]] == ["version.tools", "version.tools.custom[0].implementation"]


def test_validate_pack_exits_2_for_a_missing_file():
    with pytest.raises(CommandError) as caught:
        call_command("validate_pack", "/no/such/pack.yaml")
    assert caught.value.returncode == 2


@pytest.mark.slow
def test_the_real_process_exit_codes_are_exact(tmp_path):
    assert run("validate_pack", str(CORPUS_FILES[0])).returncode == 0
    invalid = run("validate_pack", str(RUFF))
    assert invalid.returncode == 1
    assert f"{RUFF}: invalid" in invalid.stdout
    assert run("validate_pack", str(tmp_path / "missing.yaml")).returncode == 2
    assert run("validate_pack").returncode == 2


def test_publish_pack_publishes_into_the_workspace(workspace, member, tmp_path, capsys):
    path = tmp_path / "tiny.yaml"
    path.write_text(bundle_yaml())
    call_command("publish_pack", str(path), "--workspace", "acme", "--user", "bob")
    version = PackVersion.objects.get()
    assert version.workspace == workspace
    assert version.published_by == member
    assert "Published tiny v1" in capsys.readouterr().out


def test_publish_pack_exits_1_on_a_conflict_and_2_on_usage_errors(workspace, tmp_path):
    path = tmp_path / "tiny.yaml"
    path.write_text(bundle_yaml())
    call_command("publish_pack", str(path), "--workspace", "acme")
    with pytest.raises(SystemExit) as exited:
        call_command("publish_pack", str(path), "--workspace", "acme")
    assert exited.value.code == 1
    with pytest.raises(CommandError) as caught:
        call_command("publish_pack", str(path), "--workspace", "nope")
    assert caught.value.returncode == 2
    with pytest.raises(SystemExit) as exited:
        call_command("publish_pack", str(RUFF), "--workspace", "acme")
    assert exited.value.code == 1
    assert PackVersion.objects.count() == 1

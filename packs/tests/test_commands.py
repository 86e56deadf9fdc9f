from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from packs.models import PackVersion
from packs.tests.factories import CORPUS_FILES, EXAMPLE_FILES, bundle_yaml

RUFF = EXAMPLE_FILES[0].parent / "cli-smoke-ruff.yaml"
ROOT = Path(__file__).resolve().parents[2]


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, capture_output=True, text=True, timeout=120)


def test_validate_pack_exits_0_and_says_valid_for_every_corpus_pack(capsys):
    call_command("validate_pack", *[str(p) for p in CORPUS_FILES])
    out = capsys.readouterr().out.splitlines()
    assert out == [f"{p}: valid" for p in CORPUS_FILES]


def test_validate_pack_exits_1_and_lists_errors_with_lines(tmp_path, capsys):
    broken = tmp_path / "broken.yaml"
    source = bundle_yaml().replace("difficulty: easy", "difficulty: trivial")
    broken.write_text(source)
    with pytest.raises(SystemExit) as exited:
        call_command("validate_pack", str(CORPUS_FILES[0]), str(broken))
    assert exited.value.code == 1
    out = capsys.readouterr().out.splitlines()
    line = source.splitlines().index("    difficulty: trivial") + 1
    assert out[0] == f"{CORPUS_FILES[0]}: valid"
    assert out[1] == f"{broken}: invalid"
    assert out[2].startswith("  challenges[0].difficulty ")
    assert out[2].endswith(f"(line {line})")


def test_validate_pack_json_prints_one_object_per_file(capsys):
    with pytest.raises(SystemExit) as exited:
        call_command("validate_pack", str(RUFF), str(CORPUS_FILES[0]), "--json")
    assert exited.value.code == 1
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert lines[0]["file"] == str(RUFF)
    assert lines[0]["valid"] is False
    assert lines[0]["errors"][0]["line"] == 5
    assert set(lines[0]["errors"][0]) == {"field", "message", "line"}
    assert lines[1] == {"file": str(CORPUS_FILES[0]), "valid": True, "errors": []}


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

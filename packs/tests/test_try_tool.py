from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

DEMO = str(Path(__file__).resolve().parents[1] / "demo" / "demo-file-fixes.yaml")


def run(*args: str) -> list[dict]:
    out = io.StringIO()
    call_command("try_tool", *args, stdout=out, stderr=io.StringIO())
    return [json.loads(line) for line in out.getvalue().splitlines() if line.strip()]


def test_it_runs_a_composed_tool_against_staged_case_files():
    lines = run(DEMO, "--call", "read_config", '{"name": "settings.json"}', "--case", "debug-typo")
    assert len(lines) == 1 and lines[0]["tool"] == "read_config" and lines[0]["is_error"] is False
    assert lines[0]["content"]["path"] == "config/settings.json"


def test_it_runs_a_calls_file_in_order(tmp_path):
    calls = tmp_path / "calls.json"
    calls.write_text(
        json.dumps(
            [
                {"tool": "write_file", "args": {"path": "a.txt", "content": "hi"}},
                {"tool": "read_file", "args": {"path": "a.txt"}},
                {"tool": "exec", "args": {"command": ["id"]}},
            ]
        )
    )
    lines = run(DEMO, "--calls", str(calls))
    assert [line["tool"] for line in lines] == ["write_file", "read_file", "exec"]
    assert lines[1]["content"]["content"] == "hi"
    assert lines[2] == {"tool": "exec", "is_error": True, "content": {"error": 'tool "exec" is not available in this runtime'}}


def test_it_exits_1_for_an_invalid_pack(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("pack: {slug: x}\n")
    with pytest.raises(CommandError) as info:
        run(str(bad), "--call", "read_file", "{}")
    assert info.value.returncode == 1


@pytest.mark.parametrize(
    "args",
    [
        ["--call", "read_file", "{"],
        [],
        ["--call", "read_file", "{}", "--calls", "x.json"],
        ["--calls", "/nonexistent/calls.json"],
        ["--call", "read_file", "{}", "--case", "no-such-case"],
        ["--call", "read_file", "{}", "--secret", "NOVALUE"],
    ],
)
def test_it_exits_2_on_usage_errors(args):
    with pytest.raises(CommandError) as info:
        run(DEMO, *args)
    assert info.value.returncode == 2


def test_it_exits_2_for_a_missing_pack_file():
    with pytest.raises(CommandError) as info:
        run("/nonexistent/pack.yaml", "--call", "read_file", "{}")
    assert info.value.returncode == 2


def test_it_pre_starts_no_spare_sandbox_even_where_workers_keep_one(settings):
    from engine.sandbox import pool

    settings.SANDBOX_WARM_POOL = 1
    pool.POOL.close()
    assert pool.POOL.idle() == 0
    run(DEMO, "--call", "read_config", '{"name": "settings.json"}', "--case", "debug-typo")
    assert pool.POOL.idle() == 0  # one sandbox for the command, none started for a next case

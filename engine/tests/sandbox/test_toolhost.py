"""The in-sandbox data tools, run directly (as the unisolated mode would): matching and file checks."""

from __future__ import annotations

import os
import random

import pytest

from engine.sandbox.toolhost import LineMatcher, ToolFailure, Workspace, handle

PATTERNS = [r"^foo$", r"o+", r"x*", r"\s+b", r"a.b", r"^$", r"b$", r"[^a]b", r"foo|^b", r"\bfo", r"(?i)FOO", r"\Afoo", r"é+", r"o\nf"]


def test_whole_file_matching_finds_exactly_the_lines_a_line_by_line_search_finds():
    rng = random.Random(14)
    for _ in range(300):
        lines = ["".join(rng.choice("fo ab\té") for _ in range(rng.randint(0, 8))) for _ in range(rng.randint(0, 8))]
        for pattern in PATTERNS:
            matcher = LineMatcher(pattern, True)
            assert list(matcher.matching(lines)) == [k for k, line in enumerate(lines) if matcher.line(line) is not None]


def test_invalid_and_re2_incompatible_patterns_are_reported():
    for pattern in ("(", r"(a)\1", "(?=a)"):
        with pytest.raises(ToolFailure) as info:
            LineMatcher(pattern, True)
        assert info.value.message.startswith("invalid regex")


@pytest.fixture
def ws(tmp_path):
    (tmp_path / "ok.json").write_text('{"a": 1}')
    os.mkfifo(tmp_path / "pipe")
    (tmp_path / "big").write_bytes(b"x" * 100)
    os.symlink("/etc/passwd", tmp_path / "out")
    return Workspace(str(tmp_path))


@pytest.mark.parametrize(
    "path, code",
    [("/workspace/pipe", "not_a_file"), ("/workspace/out", "outside"), ("/workspace/none", "not_found"), ("/etc/passwd", "outside")],
)
def test_reads_refuse_fifos_links_and_outside_paths(ws, path, code):
    with pytest.raises(ToolFailure) as info:
        ws.read(path, 1024)
    assert info.value.code == code


def test_reads_check_the_size_first(ws):
    with pytest.raises(ToolFailure) as info:
        ws.read("/workspace/big", 10)
    assert info.value.code == "too_large" and info.value.message == "100"
    assert ws.read("/workspace/ok.json", 1024) == b'{"a": 1}'


def test_handle_reports_errors_as_values(ws):
    answer = handle("detect", {"root": ws.root, "args": {"cwd": "/workspace", "mode": "test"}})
    assert answer == {"ok": None}
    assert handle("search_text", {"root": ws.root, "args": {"base": "/workspace", "pattern": "("}})["error"] == "regex"

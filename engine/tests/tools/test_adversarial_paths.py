"""Adversarial path containment: every path argument of every primitive."""

from __future__ import annotations

import os

import pytest

from engine.tests.tools.support import requires_bwrap

OUTSIDE = "is outside the sandbox workspace"
ESCAPES = [
    "../etc/passwd",
    "/etc/passwd",
    "/workspace/../etc/passwd",
    "foo/../../etc/passwd",
    "/workspace-other/file",
    "/workspace/a\x00b",
    "a" * 300,
    "/" + "x/" * 3000,
    "//etc/passwd",
    "/workspace/./../../root",
]


@pytest.mark.parametrize("raw", ESCAPES)
def test_read_file_refuses_escape(harness_factory, raw):
    assert OUTSIDE in harness_factory().error("read_file", {"path": raw})


@pytest.mark.parametrize("raw", ESCAPES[:5])
def test_write_file_refuses_escape(harness_factory, raw):
    assert OUTSIDE in harness_factory().error("write_file", {"path": raw, "content": "x"})


@pytest.mark.parametrize(
    "tool,args",
    [
        ("list_files", {"prefix": "/etc"}),
        ("search_files", {"pattern": "*", "path": "/"}),
        ("search_text", {"pattern": "root", "path": "/etc"}),
        ("query_json", {"query": ".", "file_path": "/etc/passwd"}),
        ("query_json", {"query": ".", "json": "1", "output_path": "/tmp/out.json"}),
        ("query_sql", {"engine": "sqlite", "query": "select 1", "database_path": "/etc/passwd"}),
        ("query_sql", {"engine": "sqlite", "query": "select 1", "database_path": "../x.db"}),
    ],
)
def test_every_path_argument_is_contained(harness_factory, tool, args):
    assert OUTSIDE in harness_factory().error(tool, args)


@requires_bwrap
@pytest.mark.parametrize("tool", ["exec", "run_tests", "build"])
def test_working_directory_is_contained(harness_factory, tool):
    args = {"command": ["true"], "working_directory": "/etc"}
    assert OUTSIDE in harness_factory().error(tool, args)


@pytest.fixture
def outside(tmp_path):
    secret_dir = tmp_path / "outside"
    secret_dir.mkdir()
    (secret_dir / "db.sqlite3").write_text("PROJECT-DB-CANARY")
    return secret_dir


def _link(h, target, name):
    os.symlink(target, os.path.join(h.sandbox.root, name))


def test_symlink_to_outside_file_is_refused(harness_factory, outside):
    h = harness_factory()
    _link(h, str(outside / "db.sqlite3"), "evil")
    assert OUTSIDE in h.error("read_file", {"path": "evil"})
    assert OUTSIDE in h.error("query_sql", {"engine": "sqlite", "query": "select 1", "database_path": "evil"})


def test_dangling_symlink_write_does_not_create_outside(harness_factory, outside):
    h = harness_factory()
    _link(h, str(outside / "pwned.txt"), "evil")
    assert OUTSIDE in h.error("write_file", {"path": "evil", "content": "x"})
    assert not (outside / "pwned.txt").exists()


def test_symlinked_parent_directory_is_refused(harness_factory, outside):
    h = harness_factory()
    _link(h, str(outside), "dir")
    assert OUTSIDE in h.error("read_file", {"path": "dir/db.sqlite3"})
    assert OUTSIDE in h.error("write_file", {"path": "dir/new.txt", "content": "x"})
    assert OUTSIDE in h.error("list_files", {"prefix": "dir"})
    assert not (outside / "new.txt").exists()


def test_relative_symlink_climbing_out_is_refused(harness_factory):
    h = harness_factory()
    _link(h, "../../../../etc/passwd", "up")
    assert OUTSIDE in h.error("read_file", {"path": "up"})


def test_symlink_inside_workspace_is_followed(harness_factory):
    h = harness_factory()
    h.call("write_file", {"path": "real.txt", "content": "inside"})
    _link(h, "/workspace/real.txt", "alias")
    _link(h, "real.txt", "alias2")
    assert h.content("read_file", {"path": "alias"})["content"] == "inside"
    assert h.content("read_file", {"path": "alias2"})["content"] == "inside"


def test_symlink_loop_is_refused(harness_factory):
    h = harness_factory()
    _link(h, "b", "a")
    _link(h, "a", "b")
    assert OUTSIDE in h.error("read_file", {"path": "a"})


def test_list_files_does_not_follow_symlinks_out(harness_factory, outside):
    h = harness_factory()
    _link(h, str(outside), "dir")
    h.call("write_file", {"path": "ok.txt", "content": ""})
    files = h.content("list_files", {})["files"]
    assert [f["path"] for f in files] == ["/workspace/ok.txt"]
    assert h.content("search_text", {"pattern": "CANARY"})["content"]["matches"] == []


def test_spill_output_path_cannot_be_steered_outside(harness_factory, outside):
    h = harness_factory()
    _link(h, str(outside), ".agentclash")
    h.call("write_file", {"path": "big.txt", "content": ("needle " * 200 + "\n") * 100})
    env = h.content("search_text", {"pattern": "needle"})
    assert env["truncated"] is True and env["full_output_path"] is None
    assert os.listdir(outside) == ["db.sqlite3"]


@requires_bwrap
def test_symlink_created_by_exec_is_refused(harness_factory):
    h = harness_factory()
    assert not h.call("exec", {"command": ["ln", "-s", "/etc/shadow", "shadow"]}).is_error
    assert not h.call("exec", {"command": ["ln", "-s", "/", "root"]}).is_error
    assert OUTSIDE in h.error("read_file", {"path": "shadow"})
    assert OUTSIDE in h.error("read_file", {"path": "root/etc/passwd"})
    assert OUTSIDE in h.error("write_file", {"path": "root/tmp/x", "content": "x"})


@requires_bwrap
def test_dangling_symlink_created_by_exec_cannot_redirect_output_path(harness_factory):
    h = harness_factory()
    h.call("exec", {"command": ["ln", "-s", "/tmp/escaped.json", "out.json"]})
    assert OUTSIDE in h.error("query_json", {"query": ".", "json": "1", "output_path": "out.json"})
    assert not os.path.exists("/tmp/escaped.json")


@requires_bwrap
def test_hardlink_to_host_file_is_impossible(harness_factory):
    h = harness_factory()
    result = h.call("exec", {"command": ["ln", "/usr/bin/env", "envlink"]})
    assert result.is_error

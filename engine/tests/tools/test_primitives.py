from __future__ import annotations

import json
import sqlite3

import pytest

from engine.tests.tools.support import manifest, requires_bwrap


def test_submit_returns_submitted_and_sets_answer(harness_factory):
    h = harness_factory()
    result = h.call("submit", {"answer": "42"})
    assert json.loads(result.content) == {"submitted": True}
    assert result.submitted_answer == "42" and not result.is_error


def test_submit_blank_answer_is_an_error(harness_factory):
    assert harness_factory().error("submit", {"answer": "  "}) == "answer is required"


def test_write_then_read_file(harness_factory):
    h = harness_factory()
    assert h.content("write_file", {"path": "dir/a.txt", "content": "héllo"}) == {"path": "dir/a.txt", "written": True, "bytes": 6}
    assert h.content("read_file", {"path": " /workspace/dir/a.txt "}) == {"path": "/workspace/dir/a.txt", "content": "héllo"}


def test_read_missing_file(harness_factory):
    assert harness_factory().error("read_file", {"path": "nope.txt"}) == 'file "nope.txt" was not found'


def test_read_requires_path(harness_factory):
    assert harness_factory().error("read_file", {}) == "path is required"


def test_read_directory_is_an_error(harness_factory):
    h = harness_factory()
    h.call("write_file", {"path": "d/x", "content": ""})
    assert h.error("read_file", {"path": "d"}) == 'path "d" is not a file'


def test_list_files_recursive_with_sizes(harness_factory):
    h = harness_factory()
    h.call("write_file", {"path": "a.txt", "content": "12"})
    h.call("write_file", {"path": "sub/b.txt", "content": "123"})
    assert h.content("list_files", {}) == {
        "prefix": "/workspace",
        "files": [{"path": "/workspace/a.txt", "size": 2}, {"path": "/workspace/sub/b.txt", "size": 3}],
    }
    assert h.content("list_files", {"prefix": "sub"})["files"] == [{"path": "/workspace/sub/b.txt", "size": 3}]


def test_list_files_missing_prefix(harness_factory):
    assert harness_factory().error("list_files", {"prefix": "nope"}) == 'prefix "nope" was not found'


def test_workspace_byte_cap_refuses_writes(harness_factory):
    m = manifest([])
    m["filesystem"] = {"max_workspace_bytes": 20000}
    h = harness_factory(m)
    assert h.error("write_file", {"path": "big", "content": "x" * 30000}) == "workspace size limit exceeded"
    assert not h.call("write_file", {"path": "small", "content": "x"}).is_error


def test_search_files_glob(harness_factory):
    h = harness_factory()
    for p in ("a.py", "b.txt", "src/c.py"):
        h.call("write_file", {"path": p, "content": "x"})
    env = h.content("search_files", {"pattern": "*.py"})
    assert env["truncated"] is False
    assert env["content"] == {
        "pattern": "*.py",
        "path": "/workspace",
        "max_results": 100,
        "files": ["/workspace/a.py", "/workspace/src/c.py"],
    }
    assert h.content("search_files", {"pattern": "*.py", "max_results": 1})["content"]["files"] == ["/workspace/a.py"]


def test_search_text_matches_lines(harness_factory):
    h = harness_factory()
    h.call("write_file", {"path": "a.py", "content": "one\nTODO two\ntodo three\n"})
    h.call("write_file", {"path": "b.txt", "content": "TODO\n"})
    env = h.content("search_text", {"pattern": "todo", "include": "*.py", "case_sensitive": False})
    assert env["content"]["matches"] == [
        {"path": "/workspace/a.py", "line_number": 2, "line_text": "TODO two"},
        {"path": "/workspace/a.py", "line_number": 3, "line_text": "todo three"},
    ]
    assert len(h.content("search_text", {"pattern": "TODO", "max_results": 1})["content"]["matches"]) == 2  # per file
    assert h.error("search_text", {"pattern": "("}).startswith("invalid regex")


def test_envelope_spills_large_output_with_capped_preview(harness_factory):
    h = harness_factory()
    h.call("write_file", {"path": "big.txt", "content": ("needle " * 200 + "\n") * 100})
    env = h.content("search_text", {"pattern": "needle"})
    assert env["truncated"] is True and env["total_bytes"] > 32768
    assert len(env["preview"].encode()) <= 8192
    assert env["full_output_path"].startswith("/workspace/.agentclash/spill/search_text_")
    full = h.content("read_file", {"path": env["full_output_path"]})["content"]
    assert len(json.loads(full)["matches"]) == 100


def test_query_json_inline_and_file(harness_factory):
    h = harness_factory()
    assert h.content("query_json", {"query": ".a", "json": '{"a": [1, 2]}'})["content"] == {"query": ".a", "result": [1, 2]}
    assert h.content("query_json", {"query": ".a[]", "json": '{"a": [1, 2]}'})["content"]["result"] == [1, 2]
    assert h.content("query_json", {"query": "empty", "json": "{}"})["content"]["result"] is None
    h.call("write_file", {"path": "d.json", "content": '{"items": [{"id": 1}, {"id": 2}]}'})
    assert h.content("query_json", {"query": "[.items[].id]", "file_path": "d.json"})["content"]["result"] == [1, 2]


def test_query_json_output_path(harness_factory):
    h = harness_factory()
    env = h.content("query_json", {"query": ".[]", "json": "[1, 2]", "output_path": "out.txt"})
    assert env["content"] == {"query": ".[]", "output_path": "out.txt", "written": True, "total_bytes": 4}
    assert h.content("read_file", {"path": "out.txt"})["content"] == "1\n2\n"


def test_query_json_errors(harness_factory):
    h = harness_factory()
    assert h.error("query_json", {"query": ".a"}) == "exactly one of file_path or json is required"
    assert h.error("query_json", {"query": ".a", "json": "{}", "file_path": "x"}) == "exactly one of file_path or json is required"
    assert h.error("query_json", {"query": "", "json": "{}"}) == "query is required"
    assert h.error("query_json", {"query": ".[[[", "json": "{}"}).startswith("jq: error")
    assert h.error("query_json", {"query": ".", "file_path": "missing.json"}) == 'file "missing.json" was not found'


def test_query_json_infinite_program_times_out(harness_factory, monkeypatch):
    from engine.tools.primitives import query

    monkeypatch.setattr(query, "JQ_TIMEOUT", 0.5)
    assert harness_factory().error("query_json", {"query": "last(range(1e15))", "json": "{}"}) == "jq query timed out"


@pytest.fixture
def db_harness(harness_factory):
    h = harness_factory()
    path = h.sandbox.host_path("shop.db")
    conn = sqlite3.connect(path)
    conn.executescript("CREATE TABLE orders(id INTEGER, item TEXT, data BLOB); INSERT INTO orders VALUES (1,'a',x'00ff'),(2,'b',NULL);")
    conn.commit()
    conn.close()
    return h


def test_query_sql_rows(db_harness):
    env = db_harness.content(
        "query_sql", {"engine": "SQLite", "query": "SELECT id, item, data FROM orders ORDER BY id", "database_path": "shop.db"}
    )
    assert env["content"] == {
        "engine": "sqlite",
        "query": "SELECT id, item, data FROM orders ORDER BY id",
        "rows": [{"id": 1, "item": "a", "data": "00ff"}, {"id": 2, "item": "b", "data": None}],
    }


def test_query_sql_output_path(db_harness):
    env = db_harness.content(
        "query_sql", {"engine": "sqlite", "query": "SELECT id FROM orders", "database_path": "shop.db", "output_path": "rows.json"}
    )
    assert env["content"]["written"] is True
    assert json.loads(db_harness.content("read_file", {"path": "rows.json"})["content"]) == [{"id": 1}, {"id": 2}]


@pytest.mark.parametrize(
    "query",
    [
        "DELETE FROM orders",
        "INSERT INTO orders VALUES (3,'c',NULL)",
        "UPDATE orders SET item='z'",
        "DROP TABLE orders",
        "CREATE TABLE t(x)",
        "ATTACH DATABASE '/etc/passwd' AS p",
        "PRAGMA journal_mode=WAL",
        "PRAGMA writable_schema=1",
        "SELECT load_extension('x')",
    ],
)
def test_query_sql_refuses_writes_attach_and_pragmas(db_harness, query):
    message = db_harness.error("query_sql", {"engine": "sqlite", "query": query, "database_path": "shop.db"})
    assert message.startswith("sql error")
    rows = db_harness.content("query_sql", {"engine": "sqlite", "query": "SELECT count(*) AS n FROM orders", "database_path": "shop.db"})
    assert rows["content"]["rows"] == [{"n": 2}]


def test_query_sql_time_budget(db_harness, monkeypatch):
    from engine.tools.primitives import query

    monkeypatch.setattr(query, "SQL_TIME_BUDGET", 0.3)
    slow = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c) SELECT count(*) FROM c"
    assert (
        db_harness.error("query_sql", {"engine": "sqlite", "query": slow, "database_path": "shop.db"})
        == "sql query exceeded its time budget"
    )


def test_query_sql_argument_errors(db_harness):
    assert (
        db_harness.error("query_sql", {"engine": "postgres", "query": "x", "database_path": "shop.db"})
        == 'engine "postgres" is not supported (only sqlite)'
    )
    assert db_harness.error("query_sql", {"engine": "sqlite", "query": "select 1"}) == "database_path is required for sqlite"
    assert (
        db_harness.error("query_sql", {"engine": "sqlite", "query": "select 1", "database_path": "no.db"})
        == 'database "no.db" was not found'
    )


@requires_bwrap
def test_exec_returns_exit_code_and_output(harness_factory):
    h = harness_factory()
    assert h.content("exec", {"command": ["echo", "hi"]}) == {"exit_code": 0, "stdout": "hi\n"}
    result = h.call("exec", {"command": ["ls", "/nonexistent"]})
    assert result.is_error and json.loads(result.content)["exit_code"] == 2


@requires_bwrap
def test_exec_missing_binary_is_127(harness_factory):
    result = harness_factory().call("exec", {"command": ["no-such-binary"]})
    assert result.is_error and json.loads(result.content)["exit_code"] == 127


@requires_bwrap
def test_exec_working_directory_and_environment(harness_factory):
    h = harness_factory()
    h.call("write_file", {"path": "sub/x", "content": ""})
    assert h.content("exec", {"command": ["pwd"], "working_directory": "sub"})["stdout"] == "/workspace/sub\n"
    out = h.content("exec", {"command": ["printenv", "FOO"], "environment": {"FOO": "bar"}})
    assert out["stdout"] == "bar\n"


@requires_bwrap
def test_run_tests_autodetects_python(harness_factory):
    h = harness_factory(manifest(["build", "file"]))
    h.call("write_file", {"path": "pyproject.toml", "content": "[project]\nname='x'\n"})
    h.call(
        "write_file",
        {
            "path": "test_ok.py",
            "content": "import unittest\nclass T(unittest.TestCase):\n    def test_a(self):\n        self.assertTrue(True)\n",
        },
    )
    result = h.call("run_tests", {})
    env = json.loads(result.content)["content"]
    assert not result.is_error
    assert env["framework"] == "python" and env["mode"] == "test" and env["exit_code"] == 0
    assert env["summary"] == {"status": "completed"} and env["command"] == "python3 -m unittest discover"


@requires_bwrap
def test_build_failure_sets_is_error(harness_factory):
    h = harness_factory(manifest(["build"]))
    result = h.call("build", {"command": ["python3", "-c", "import sys; sys.exit(3)"]})
    env = json.loads(result.content)["content"]
    assert result.is_error and env["exit_code"] == 3 and env["summary"]["status"] == "failed"


def test_build_without_detectable_project(harness_factory):
    assert harness_factory(manifest(["build"])).error("build", {}) == "no build command given and none could be detected"


@requires_bwrap
def test_run_tests_timeout_is_exit_124(harness_factory):
    h = harness_factory(manifest(["build"]))
    result = h.call("run_tests", {"command": ["sleep", "5"], "timeout_seconds": 1})
    env = json.loads(result.content)["content"]
    assert result.is_error and env["exit_code"] == 124 and env["timed_out"] is True


@requires_bwrap
def test_run_tests_shell_syntax_needs_allow_shell(harness_factory):
    h = harness_factory(manifest(["build"]))
    result = h.call("run_tests", {"command": "echo a && echo b"})
    assert result.failure_origin == "policy" and json.loads(result.content) == {"error": "shell is not allowed in this runtime"}
    assert json.loads(h.call("run_tests", {"command": "echo plain"}).content)["content"]["stdout"] == "plain\n"


def test_policy_denial_when_kind_disallowed_at_call_time(harness_factory):
    from engine.tools.primitives.files import _read

    h = harness_factory(manifest(["data"]))
    result = _read(h.toolset.ctx)({"path": "x"})
    assert result.failure_origin == "policy" and json.loads(result.content) == {"error": "tool is not allowed in this runtime"}


def test_a_query_json_result_past_the_inline_limit_goes_to_the_spill_file_as_jq_printed_it(harness_factory):
    # issue 23: a big result was parsed, re-dumped and redacted as objects in the worker (25 MB of
    # JSON grew it by 226 MB; bench/data_tool_rss.py measures it); now it is text end to end.
    h = harness_factory(secrets={"TOKEN": "tok-abcdef123456"})
    rows = [{"id": i, "note": "row" if i != 7 else "tok-abcdef123456"} for i in range(5000)]
    h.sandbox.write_file("/workspace/big.json", json.dumps(rows).encode())
    envelope = h.content("query_json", {"query": ".[]", "file_path": "big.json"})
    assert envelope["truncated"] is True and envelope["total_lines"] == 5000
    assert envelope["preview"].startswith('{"id":0,"note":"row"}')
    spilled = h.sandbox.read_file(envelope["full_output_path"]).decode()
    lines = spilled.split("\n")
    assert len(lines) == 5000 and json.loads(lines[4999]) == {"id": 4999, "note": "row"}
    assert "tok-abcdef123456" not in spilled  # spill files are agent-readable: masked as before
    small = h.content("query_json", {"query": ".[1]", "file_path": "big.json"})
    assert small["truncated"] is False and small["content"]["result"] == {"id": 1, "note": "row"}


def test_a_data_tool_result_past_the_answer_bound_is_refused_saying_how_to_narrow_it(harness_factory):
    # issue 23: the worker reads an answer whole (bench/data_tool_rss.py): a 26 MB result grew it by
    # 69 MiB, so answers stop at toolhost.MAX_OUTPUT_BYTES (8 MiB) and a bigger one is refused.
    h = harness_factory(manifest(["file", "data"], shell=True))
    script = "import json; json.dump(['x' * 1000] * 10000, open('/workspace/big.json', 'w'))"  # ~10 MB
    assert h.sandbox.exec(["python3", "-c", script], timeout=120).exit_code == 0
    whole = h.call("query_json", {"query": ".", "file_path": "big.json"})
    assert whole.is_error
    assert json.loads(whole.content) == {
        "error": "jq result too large (over 8 MiB): narrow the query (fewer fields, a slice of the array, a LIMIT)"
    }
    part = h.content("query_json", {"query": ".[:7000]", "file_path": "big.json"})  # ~7 MB: spilled as before
    assert part["truncated"] is True and part["total_bytes"] > 7_000_000
    assert len(h.sandbox.read_file(part["full_output_path"], 16 * 1024 * 1024)) == part["total_bytes"]

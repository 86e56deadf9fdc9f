"""query_json (jq bindings) and query_sql (read-only SQLite) (kind ``data``)."""

from __future__ import annotations

import json
import os
import sqlite3
import stat
import time
import urllib.parse
from typing import Any

import jq

from engine.sandbox.base import WorkspaceFullError, WorkspacePathError
from engine.tools import args as A
from engine.tools import forkrun
from engine.tools.context import ToolContext
from engine.tools.envelope import compact, wrap
from engine.tools.registry import PrimitiveSpec, register
from engine.tools.results import NO_SANDBOX, denied, error, ok
from engine.types import ToolResult

JSON_INPUT_LIMIT = 32 * 1024 * 1024
JQ_TIMEOUT = 10.0
SQL_TIME_BUDGET = 10.0
SQL_MAX_ROWS = 100_000

_READ_PRAGMAS = frozenset(
    {
        "table_info",
        "table_xinfo",
        "index_list",
        "index_info",
        "index_xinfo",
        "foreign_key_list",
        "table_list",
        "collation_list",
        "function_list",
        "database_list",
    }
)


def _write_output(ctx: ToolContext, path: str, data: bytes) -> ToolResult | None:
    assert ctx.sandbox is not None
    try:
        ctx.sandbox.write_file(path, data)
    except WorkspacePathError as exc:
        return error(str(exc))
    except WorkspaceFullError:
        return error("workspace size limit exceeded")
    except (IsADirectoryError, NotADirectoryError):
        return error(f'path "{path}" is not a writable file')
    return None


def _jq_eval(query: str, text: str) -> list[str]:
    program = jq.compile(query)
    return [json.dumps(v, separators=(",", ":"), ensure_ascii=False) for v in program.input_text(text)]


def _query_json(ctx: ToolContext):
    def execute(args: dict[str, Any]) -> ToolResult:
        if not ctx.kind_allowed("data"):
            return denied()
        query = A.string(args, "query")
        file_path = A.string(args, "file_path").strip()
        inline = args.get("json")
        if inline is not None and not isinstance(inline, str):
            raise A.ArgumentError("json")
        output_path = A.string(args, "output_path").strip()
        if not query.strip():
            return error("query is required")
        if bool(file_path) == (inline is not None and inline != ""):
            return error("exactly one of file_path or json is required")
        if (file_path or output_path) and ctx.sandbox is None:
            return error(NO_SANDBOX)
        if file_path:
            try:
                raw = ctx.sandbox.read_file(file_path)  # type: ignore[union-attr]
            except WorkspacePathError as exc:
                return error(str(exc))
            except (FileNotFoundError, NotADirectoryError):
                return error(f'file "{file_path}" was not found')
            except IsADirectoryError:
                return error(f'path "{file_path}" is not a file')
            if len(raw) > JSON_INPUT_LIMIT:
                return error("json input exceeds size limit")
            text = raw.decode("utf-8", "replace")
        else:
            text = inline or ""
            if len(text.encode("utf-8")) > JSON_INPUT_LIMIT:
                return error("json input exceeds size limit")
        try:
            lines = forkrun.run(lambda: _jq_eval(query, text), JQ_TIMEOUT)
        except forkrun.ForkTimeout:
            return error("jq query timed out")
        except forkrun.ForkFailed:
            return error("jq query failed")
        except ValueError as exc:
            message = str(exc).strip().splitlines()[0] if str(exc).strip() else "jq query failed"
            return error(message[:500])
        if output_path:
            data = ("\n".join(lines) + ("\n" if lines else "")).encode("utf-8")
            failed = _write_output(ctx, output_path, data)
            if failed:
                return failed
            return ok(wrap(ctx, "query_json", {"query": query, "output_path": output_path, "written": True, "total_bytes": len(data)}))
        values = [json.loads(line) for line in lines]
        result = None if not values else values[0] if len(values) == 1 else values
        return ok(wrap(ctx, "query_json", {"query": query, "result": result}))

    return execute


def _authorizer(action: int, arg1: str | None, arg2: str | None, db: str | None, trigger: str | None) -> int:
    if action in (sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ, sqlite3.SQLITE_FUNCTION, sqlite3.SQLITE_RECURSIVE):
        return sqlite3.SQLITE_OK
    if action == sqlite3.SQLITE_PRAGMA and (arg1 or "").lower() in _READ_PRAGMAS and arg2 is None:
        return sqlite3.SQLITE_OK
    return sqlite3.SQLITE_DENY


def _cell(value: Any) -> Any:
    if isinstance(value, bytes):
        return value.hex()
    if isinstance(value, float) and (value != value or value in (float("inf"), float("-inf"))):
        return None
    return value


def _run_sql(host_path: str, query: str) -> list[dict[str, Any]]:
    uri = "file:" + urllib.parse.quote(host_path) + "?mode=ro"
    conn = sqlite3.connect(uri, uri=True, timeout=1.0, isolation_level=None, check_same_thread=False)
    try:
        deadline = time.monotonic() + SQL_TIME_BUDGET
        conn.set_progress_handler(lambda: 1 if time.monotonic() > deadline else 0, 10_000)
        conn.set_authorizer(_authorizer)
        cursor = conn.execute(query)
        columns = [d[0] for d in cursor.description or []]
        rows: list[dict[str, Any]] = []
        for row in cursor:
            rows.append({c: _cell(v) for c, v in zip(columns, row, strict=False)})
            if len(rows) >= SQL_MAX_ROWS:
                break
        return rows
    finally:
        conn.close()


def _query_sql(ctx: ToolContext):
    def execute(args: dict[str, Any]) -> ToolResult:
        if not ctx.kind_allowed("data"):
            return denied()
        engine = A.string(args, "engine").strip().lower()
        query = A.string(args, "query")
        database_path = A.string(args, "database_path").strip()
        output_path = A.string(args, "output_path").strip()
        if not engine:
            return error("engine is required")
        if engine != "sqlite":
            return error(f'engine "{engine}" is not supported (only sqlite)')
        if not query.strip():
            return error("query is required")
        if not database_path:
            return error("database_path is required for sqlite")
        sandbox = ctx.sandbox
        if sandbox is None or not hasattr(sandbox, "host_path"):
            return error(NO_SANDBOX)
        try:
            host = sandbox.host_path(database_path)
            st = os.lstat(host)
            if stat.S_ISDIR(st.st_mode):
                raise IsADirectoryError(database_path)
            if not stat.S_ISREG(st.st_mode):
                raise FileNotFoundError(database_path)
        except WorkspacePathError as exc:
            return error(str(exc))
        except (FileNotFoundError, NotADirectoryError):
            return error(f'database "{database_path}" was not found')
        except IsADirectoryError:
            return error(f'path "{database_path}" is not a file')
        try:
            rows = _run_sql(host, query)
        except sqlite3.OperationalError as exc:
            text = str(exc)
            if text == "interrupted":
                return error("sql query exceeded its time budget")
            return error(f"sql error: {text}")
        except sqlite3.Error as exc:
            return error(f"sql error: {exc}")
        if output_path:
            data = compact(rows).encode("utf-8")
            failed = _write_output(ctx, output_path, data)
            if failed:
                return failed
            return ok(
                wrap(
                    ctx,
                    "query_sql",
                    {"engine": "sqlite", "query": query, "output_path": output_path, "written": True, "total_bytes": len(data)},
                )
            )
        return ok(wrap(ctx, "query_sql", {"engine": "sqlite", "query": query, "rows": rows}))

    return execute


register(
    PrimitiveSpec(
        name="query_json",
        kind="data",
        description="Run a jq query over a workspace JSON file or an inline JSON string.",
        parameters={
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "jq program, e.g. .items[] | .id"},
                "file_path": {"type": "string", "description": "JSON file in /workspace (or use json)."},
                "json": {"type": "string", "description": "Inline JSON text (or use file_path)."},
                "output_path": {"type": "string", "description": "Write the results here instead of returning them."},
            },
            "required": ["query"],
            "additionalProperties": False,
        },
        examples=({"query": ".items | length", "file_path": "/workspace/data.json"}, {"query": ".a", "json": '{"a": 1}'}),
        create=_query_json,
    )
)
register(
    PrimitiveSpec(
        name="query_sql",
        kind="data",
        description="Run a read-only SQL query against a SQLite database file in the workspace.",
        parameters={
            "type": "object",
            "properties": {
                "engine": {"type": "string", "description": "Database engine; only sqlite is supported."},
                "query": {"type": "string", "description": "One SELECT statement."},
                "database_path": {"type": "string", "description": "SQLite file in /workspace."},
                "output_path": {"type": "string", "description": "Write the rows here as JSON instead of returning them."},
            },
            "required": ["engine", "query"],
            "additionalProperties": False,
        },
        examples=({"engine": "sqlite", "query": "SELECT count(*) AS n FROM orders", "database_path": "/workspace/shop.db"},),
        create=_query_sql,
    )
)

"""query_json (jq) and query_sql (read-only SQLite) (kind ``data``).

Both run INSIDE the sandbox (``engine/sandbox/toolhost.py``): jq sees only the sandbox's clean
environment (``$ENV``) and filesystem (``import ... {search: ...}``), SQLite opens the database
as the sandbox user through a checked fd, and a runaway query is killed at its deadline.
"""

from __future__ import annotations

import json
from typing import Any

from engine.sandbox import toolhost
from engine.sandbox.base import ToolRunError, WorkspaceFullError, WorkspacePathError
from engine.sandbox.local import contained_path, run_tool
from engine.tools import args as A
from engine.tools.context import ToolContext
from engine.tools.envelope import INLINE_LIMIT, compact, spill_text, wrap
from engine.tools.registry import Executor, PrimitiveSpec, register
from engine.tools.results import NO_SANDBOX, denied, error, ok
from engine.types import ToolResult

JSON_INPUT_LIMIT = 32 * 1024 * 1024
JQ_TIMEOUT = 10.0
SQL_TIME_BUDGET = 10.0
SQL_DEADLINE_SLACK = 5.0
SQL_MAX_ROWS = 100_000
RESULT_TOO_LARGE = (
    f"{{tool}} result too large (over {toolhost.MAX_OUTPUT_BYTES // (1024 * 1024)} MiB): narrow the query "
    "(fewer fields, a slice of the array, a LIMIT)"
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


def _file_error(exc: ToolRunError, raw: str, missing: str) -> str | None:
    """The message for a failure to open an agent file inside the sandbox (None: not a file error)."""
    if exc.code == "outside":
        return f'path "{raw}" is outside the sandbox workspace'
    if exc.code == "not_found":
        return missing
    if exc.code == "not_a_file":
        return f'path "{raw}" is not a file'
    return None


def _query_json(ctx: ToolContext) -> Executor:
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
        if ctx.sandbox is None:
            return error(NO_SANDBOX)
        request: dict[str, Any] = {"query": query}
        if file_path:
            try:
                request.update(path=contained_path(ctx.sandbox, file_path), limit=JSON_INPUT_LIMIT)
            except WorkspacePathError as exc:
                return error(str(exc))
        else:
            if len((inline or "").encode("utf-8")) > JSON_INPUT_LIMIT:
                return error("json input exceeds size limit")
            request["text"] = inline or ""
        try:
            lines = run_tool(ctx.sandbox, "jq", request, timeout=JQ_TIMEOUT)
        except ToolRunError as exc:
            message = _file_error(exc, file_path, f'file "{file_path}" was not found')
            if message is None:
                message = {
                    "jq": exc.message,
                    "timeout": "jq query timed out",
                    "cancelled": "jq query cancelled",
                    "too_large": "json input exceeds size limit",
                    "too_large_output": RESULT_TOO_LARGE.format(tool="jq"),
                    "memory": "jq query ran out of memory",
                    "unavailable": exc.message,
                }.get(exc.code, "jq query failed")
            return error(message or "jq query failed")
        if output_path:
            data = ("\n".join(lines) + ("\n" if lines else "")).encode("utf-8")
            failed = _write_output(ctx, output_path, data)
            if failed:
                return failed
            return ok(wrap(ctx, "query_json", {"query": query, "output_path": output_path, "written": True, "total_bytes": len(data)}))
        if sum(len(line) for line in lines) > INLINE_LIMIT:
            # Too big to show: the jq output lines (one JSON value each) go to the spill file as
            # text; parsing them would cost the worker several times their size (issue 23).
            text = "\n".join(lines)
            del lines
            return ok(spill_text(ctx, "query_json", text))
        values = [json.loads(line) for line in lines]
        result = None if not values else values[0] if len(values) == 1 else values
        return ok(wrap(ctx, "query_json", {"query": query, "result": result}))

    return execute


def _query_sql(ctx: ToolContext) -> Executor:
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
        if ctx.sandbox is None:
            return error(NO_SANDBOX)
        try:
            request = {
                "path": contained_path(ctx.sandbox, database_path),
                "query": query,
                "budget": SQL_TIME_BUDGET,
                "max_rows": SQL_MAX_ROWS,
            }
            rows = run_tool(ctx.sandbox, "sql", request, timeout=SQL_TIME_BUDGET + SQL_DEADLINE_SLACK)
        except WorkspacePathError as exc:
            return error(str(exc))
        except ToolRunError as exc:
            message = _file_error(exc, database_path, f'database "{database_path}" was not found')
            if message is None:
                message = {
                    "sql": exc.message,
                    "sql_timeout": "sql query exceeded its time budget",
                    "timeout": "sql query exceeded its time budget",
                    "cancelled": "sql query cancelled",
                    "too_large_output": RESULT_TOO_LARGE.format(tool="sql"),
                    "memory": "sql query ran out of memory",
                    "unavailable": exc.message,
                }.get(exc.code, "sql query failed")
            return error(message or "sql query failed")
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

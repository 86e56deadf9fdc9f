"""search_files (name glob) and search_text (regex over contents) (kind ``file``).

Both run INSIDE the sandbox (``engine/sandbox/toolhost.py``) under the call's deadline, and
``search_text`` uses RE2, a linear-time engine: a pattern such as ``^(a+)+$`` cannot pin a CPU.
RE2 has no backreferences or lookaround; such patterns are reported as invalid.
"""

from __future__ import annotations

from typing import Any

from engine.sandbox import toolhost
from engine.sandbox.base import ToolRunError, WorkspacePathError
from engine.sandbox.local import contained_path, run_tool
from engine.tools import args as A
from engine.tools.context import ToolContext
from engine.tools.envelope import wrap
from engine.tools.paths import clean
from engine.tools.registry import Executor, PrimitiveSpec, register
from engine.tools.results import NO_SANDBOX, denied, error, ok
from engine.types import ToolResult

SEARCH_FILE_LIMIT = 8 * 1024 * 1024
MAX_LINE_CHARS = 2_000
SEARCH_TIMEOUT = 60.0


def _search(ctx: ToolContext, tool: str, raw_path: str, request: dict[str, Any]) -> Any | ToolResult:
    try:
        request["base"] = contained_path(ctx.sandbox, raw_path)
        return run_tool(ctx.sandbox, tool, request, timeout=SEARCH_TIMEOUT)
    except WorkspacePathError as exc:
        return error(str(exc))
    except ToolRunError as exc:
        if exc.code == "outside":
            return error(f'path "{raw_path}" is outside the sandbox workspace')
        if exc.code in ("not_found", "not_a_file"):
            return error(f'path "{raw_path}" was not found')
        messages = {
            "regex": exc.message,
            "timeout": "search timed out",
            "cancelled": "search cancelled",
            "too_large_output": f"search result too large (over {toolhost.MAX_OUTPUT_BYTES // (1024 * 1024)} MiB): "
            "narrow the pattern, the path or max_results",
        }
        return error(messages.get(exc.code) or exc.message or "search failed")


def _search_files(ctx: ToolContext) -> Executor:
    def execute(args: dict[str, Any]) -> ToolResult:
        if not ctx.kind_allowed("file"):
            return denied()
        pattern = A.string(args, "pattern").strip()
        raw_path = A.string(args, "path").strip() or "/workspace"
        max_results = A.integer(args, "max_results", 100)
        if not pattern:
            return error("pattern is required")
        if max_results < 1:
            max_results = 100
        if ctx.sandbox is None:
            return error(NO_SANDBOX)
        try:
            path = clean(raw_path)
        except WorkspacePathError as exc:
            return error(str(exc))
        files = _search(ctx, "search_files", raw_path, {"pattern": pattern, "max_results": max_results})
        if isinstance(files, ToolResult):
            return files
        payload = {"pattern": pattern, "path": path, "max_results": max_results, "files": files}
        return ok(wrap(ctx, "search_files", payload))

    return execute


def _search_text(ctx: ToolContext) -> Executor:
    def execute(args: dict[str, Any]) -> ToolResult:
        if not ctx.kind_allowed("file"):
            return denied()
        pattern = A.string(args, "pattern")
        raw_path = A.string(args, "path").strip() or "/workspace"
        include = A.string(args, "include").strip()
        case_sensitive = A.boolean(args, "case_sensitive", True)
        max_results = A.integer(args, "max_results", 200)
        if not pattern:
            return error("pattern is required")
        if max_results < 1:
            max_results = 200
        if ctx.sandbox is None:
            return error(NO_SANDBOX)
        try:
            base = clean(raw_path)
        except WorkspacePathError as exc:
            return error(str(exc))
        request = {
            "pattern": pattern,
            "include": include,
            "case_sensitive": case_sensitive,
            "max_results": max_results,
            "file_limit": SEARCH_FILE_LIMIT,
            "line_chars": MAX_LINE_CHARS,
        }
        matches = _search(ctx, "search_text", raw_path, request)
        if isinstance(matches, ToolResult):
            return matches
        payload = {
            "pattern": pattern,
            "path": base,
            "include": include,
            "case_sensitive": case_sensitive,
            "max_results": max_results,
            "matches": matches,
        }
        return ok(wrap(ctx, "search_text", payload))

    return execute


register(
    PrimitiveSpec(
        name="search_files",
        kind="file",
        description="Find workspace files whose name matches a glob such as *.py.",
        parameters={
            "type": "object",
            "properties": {
                "pattern": {"type": "string", "description": "File-name glob, e.g. *.json."},
                "path": {"type": "string", "description": "Directory to search; default /workspace."},
                "max_results": {"type": "integer", "minimum": 1, "description": "Maximum files returned (default 100)."},
            },
            "required": ["pattern"],
            "additionalProperties": False,
        },
        examples=({"pattern": "*.py"}, {"pattern": "*.json", "path": "/workspace/data", "max_results": 10}),
        create=_search_files,
    )
)
register(
    PrimitiveSpec(
        name="search_text",
        kind="file",
        description="Search workspace file contents with a regular expression and return matching lines.",
        parameters={
            "type": "object",
            "properties": {
                "pattern": {"type": "string", "description": "Regular expression."},
                "path": {"type": "string", "description": "Directory to search; default /workspace."},
                "include": {"type": "string", "description": "Only files matching this glob, e.g. *.py."},
                "case_sensitive": {"type": "boolean", "description": "Default true."},
                "max_results": {"type": "integer", "minimum": 1, "description": "Maximum matches per file (default 200)."},
            },
            "required": ["pattern"],
            "additionalProperties": False,
        },
        examples=({"pattern": "def main"}, {"pattern": "todo", "include": "*.py", "case_sensitive": False}),
        create=_search_text,
    )
)

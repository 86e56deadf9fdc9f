"""search_files (name glob) and search_text (regex over contents), in Python (kind ``file``)."""

from __future__ import annotations

import fnmatch
import posixpath
import re
from typing import Any

from engine.sandbox.base import WorkspacePathError
from engine.tools import args as A
from engine.tools.context import ToolContext
from engine.tools.envelope import wrap
from engine.tools.paths import clean
from engine.tools.registry import PrimitiveSpec, register
from engine.tools.results import NO_SANDBOX, denied, error, ok
from engine.types import FileEntry, ToolResult

SEARCH_FILE_LIMIT = 8 * 1024 * 1024
MAX_LINE_CHARS = 2_000


def _entries(ctx: ToolContext, path: str) -> list[FileEntry]:
    assert ctx.sandbox is not None
    return ctx.sandbox.list_files(path)


def _search_files(ctx: ToolContext):
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
            entries = _entries(ctx, raw_path)
        except WorkspacePathError as exc:
            return error(str(exc))
        except (FileNotFoundError, NotADirectoryError):
            return error(f'path "{raw_path}" was not found')
        files = [e.path for e in entries if fnmatch.fnmatchcase(posixpath.basename(e.path), pattern)][:max_results]
        payload = {"pattern": pattern, "path": path, "max_results": max_results, "files": files}
        return ok(wrap(ctx, "search_files", payload))

    return execute


def _search_text(ctx: ToolContext):
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
            regex = re.compile(pattern, 0 if case_sensitive else re.IGNORECASE)
        except re.error as exc:
            return error(f"invalid regex: {exc}")
        try:
            base = clean(raw_path)
            entries = _entries(ctx, raw_path)
        except WorkspacePathError as exc:
            return error(str(exc))
        except (FileNotFoundError, NotADirectoryError):
            return error(f'path "{raw_path}" was not found')
        matches: list[dict[str, Any]] = []
        for entry in entries:
            if include:
                rel = posixpath.relpath(entry.path, base)
                target = rel if "/" in include else posixpath.basename(entry.path)
                if not fnmatch.fnmatchcase(target, include):
                    continue
            if entry.size > SEARCH_FILE_LIMIT:
                continue
            try:
                data = ctx.sandbox.read_file(entry.path)
            except (OSError, WorkspacePathError):
                continue
            if b"\x00" in data[:8192]:
                continue  # binary, as ripgrep skips it
            count = 0
            for number, line in enumerate(data.decode("utf-8", "replace").splitlines(), start=1):
                if regex.search(line):
                    matches.append({"path": entry.path, "line_number": number, "line_text": line[:MAX_LINE_CHARS]})
                    count += 1
                    if count >= max_results:
                        break
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

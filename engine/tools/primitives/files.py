"""read_file, write_file, list_files (kind ``file``)."""

from __future__ import annotations

from typing import Any

from engine.sandbox.base import FileTooLargeError, WorkspaceFullError, WorkspacePathError
from engine.sandbox.local import read_limited
from engine.tools import args as A
from engine.tools.context import ToolContext
from engine.tools.registry import Executor, PrimitiveSpec, register
from engine.tools.results import NO_SANDBOX, denied, error, ok
from engine.types import ToolResult

READ_LIMIT_BYTES = 4 * 1024 * 1024


def _read(ctx: ToolContext) -> Executor:
    def execute(args: dict[str, Any]) -> ToolResult:
        if not ctx.kind_allowed("file"):
            return denied()
        path = A.string(args, "path").strip()
        if not path:
            return error("path is required")
        if ctx.sandbox is None:
            return error(NO_SANDBOX)
        try:
            data = read_limited(ctx.sandbox, path, READ_LIMIT_BYTES)  # size checked before reading
        except WorkspacePathError as exc:
            return error(str(exc))
        except FileTooLargeError as exc:
            return error(f'file "{path}" is too large to read ({exc.size} bytes; limit {READ_LIMIT_BYTES})')
        except (FileNotFoundError, NotADirectoryError):
            return error(f'file "{path}" was not found')
        except IsADirectoryError:
            return error(f'path "{path}" is not a file')
        return ok({"path": path, "content": data.decode("utf-8", "replace")})

    return execute


def _write(ctx: ToolContext) -> Executor:
    def execute(args: dict[str, Any]) -> ToolResult:
        if not ctx.kind_allowed("file"):
            return denied()
        path = A.string(args, "path").strip()
        content = A.string(args, "content")
        if not path:
            return error("path is required")
        if ctx.sandbox is None:
            return error(NO_SANDBOX)
        data = content.encode("utf-8")
        try:
            ctx.sandbox.write_file(path, data)
        except WorkspacePathError as exc:
            return error(str(exc))
        except WorkspaceFullError:
            return error("workspace size limit exceeded")
        except (IsADirectoryError, NotADirectoryError):
            return error(f'path "{path}" is not a writable file')
        return ok({"path": path, "written": True, "bytes": len(data)})

    return execute


def _list(ctx: ToolContext) -> Executor:
    def execute(args: dict[str, Any]) -> ToolResult:
        if not ctx.kind_allowed("file"):
            return denied()
        prefix = A.string(args, "prefix").strip() or "/workspace"
        if ctx.sandbox is None:
            return error(NO_SANDBOX)
        try:
            entries = ctx.sandbox.list_files(prefix)
        except WorkspacePathError as exc:
            return error(str(exc))
        except (FileNotFoundError, NotADirectoryError):
            return error(f'prefix "{prefix}" was not found')
        return ok({"prefix": prefix, "files": [{"path": e.path, "size": e.size} for e in entries]})

    return execute


def _schema(props: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "object", "properties": props, "required": required, "additionalProperties": False}


register(
    PrimitiveSpec(
        name="read_file",
        kind="file",
        description="Read a UTF-8 text file from the workspace (/workspace or a relative path).",
        parameters=_schema({"path": {"type": "string", "description": "File path inside /workspace."}}, ["path"]),
        examples=({"path": "/workspace/README.md"}, {"path": "src/app.py"}),
        create=_read,
    )
)
register(
    PrimitiveSpec(
        name="write_file",
        kind="file",
        description="Create or overwrite a text file in the workspace, creating parent directories.",
        parameters=_schema(
            {
                "path": {"type": "string", "description": "File path inside /workspace."},
                "content": {"type": "string", "description": "Full new file content."},
            },
            ["path", "content"],
        ),
        examples=({"path": "notes/answer.txt", "content": "hello\n"},),
        create=_write,
    )
)
register(
    PrimitiveSpec(
        name="list_files",
        kind="file",
        description="List every file (recursively) under a workspace directory with its size in bytes.",
        parameters=_schema({"prefix": {"type": "string", "description": "Directory to list; default /workspace."}}, []),
        examples=({}, {"prefix": "/workspace/src"}),
        create=_list,
    )
)

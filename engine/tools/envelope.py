"""The structured output envelope with spill files (runtime.md §1.4)."""

from __future__ import annotations

import json
import uuid
from typing import Any

from engine.tools.context import ToolContext

INLINE_LIMIT = 32_768
PREVIEW_LINES = 50
PREVIEW_BYTES = 8_192
SPILL_DIR = "/workspace/.agentclash/spill"


def compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def spill_text(ctx: ToolContext, tool: str, text: str) -> str:
    """The truncated envelope for a result already in text form (a data tool's output lines), past
    ``INLINE_LIMIT``: the text goes to the spill file as it is, never parsed into objects — a
    25 MB JSON parsed, re-dumped and walked by the redactor grew a worker by 226 MB (issue 23)."""
    text = ctx.redactor.text(text)
    data = text.encode("utf-8")
    del text  # one copy at a time
    preview = data[:PREVIEW_BYTES].decode("utf-8", "ignore")
    preview = "\n".join(preview.split("\n")[:PREVIEW_LINES])
    result: dict[str, Any] = {
        "truncated": True,
        "preview": preview,
        "total_bytes": len(data),
        "total_lines": data.count(b"\n") + 1,
        "preview_lines": preview.count("\n") + 1,
    }
    if ctx.sandbox is not None:
        path = f"{SPILL_DIR}/{tool}_{uuid.uuid4().hex}.txt"
        try:
            ctx.sandbox.write_file(path, data)
            result["full_output_path"] = path
        except (OSError, ValueError):
            result["full_output_path"] = None
    return compact(result)


def wrap(ctx: ToolContext, tool: str, payload: Any) -> str:
    payload = ctx.redactor.json(payload)  # spill files are agent-readable: never write secrets there
    text = compact(payload)
    data = text.encode("utf-8")
    total_lines = text.count("\n") + 1
    if len(data) <= INLINE_LIMIT:
        return compact({"truncated": False, "content": payload, "total_bytes": len(data), "total_lines": total_lines})
    lines = text.split("\n")[:PREVIEW_LINES]
    preview = "\n".join(lines)
    preview_bytes = preview.encode("utf-8")
    if len(preview_bytes) > PREVIEW_BYTES:
        preview = preview_bytes[:PREVIEW_BYTES].decode("utf-8", "ignore")
    result: dict[str, Any] = {
        "truncated": True,
        "preview": preview,
        "total_bytes": len(data),
        "total_lines": total_lines,
        "preview_lines": preview.count("\n") + 1,
    }
    if ctx.sandbox is not None:
        path = f"{SPILL_DIR}/{tool}_{uuid.uuid4().hex}.txt"
        try:
            ctx.sandbox.write_file(path, data)
            result["full_output_path"] = path
        except (OSError, ValueError):  # unwritable or steered outside the workspace
            result["full_output_path"] = None
    return compact(result)

"""Result constructors shared by every primitive."""

from __future__ import annotations

import json
from typing import Any

from engine.types import ToolResult

NOT_ALLOWED = "tool is not allowed in this runtime"
NO_SANDBOX = "sandbox is not available in this runtime"


def ok(content: Any, *, is_error: bool = False) -> ToolResult:
    text = content if isinstance(content, str) else json.dumps(content, separators=(",", ":"), ensure_ascii=False)
    return ToolResult(content=text, is_error=is_error)


def error(message: str, origin: str = "primitive") -> ToolResult:
    return ToolResult(
        content=json.dumps({"error": message}, separators=(",", ":"), ensure_ascii=False), is_error=True, failure_origin=origin
    )


def denied() -> ToolResult:
    return error(NOT_ALLOWED, "policy")


def error_message(result: ToolResult) -> str:
    try:
        value = json.loads(result.content)
    except ValueError:
        return result.content
    if isinstance(value, dict):
        message = value.get("error")
        if isinstance(message, str):
            return message
    return result.content

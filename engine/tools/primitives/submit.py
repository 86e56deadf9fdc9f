from __future__ import annotations

from typing import Any

from engine.tools import args as A
from engine.tools.context import ToolContext
from engine.tools.registry import Executor, PrimitiveSpec, register
from engine.tools.results import error, ok
from engine.types import ToolResult


def create(ctx: ToolContext) -> Executor:
    def execute(args: dict[str, Any]) -> ToolResult:
        answer = A.string(args, "answer")
        if not answer.strip():
            return error("answer is required")
        result = ok({"submitted": True})
        result.submitted_answer = answer
        return result

    return execute


register(
    PrimitiveSpec(
        name="submit",
        kind="always",
        description="Submit your final answer; call it alone, once, when you are done.",
        parameters={
            "type": "object",
            "properties": {"answer": {"type": "string", "description": "The final answer."}},
            "required": ["answer"],
            "additionalProperties": False,
        },
        examples=({"answer": "42"},),
        create=create,
    )
)

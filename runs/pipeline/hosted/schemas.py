"""The hosted-agent protocol's JSON Schemas, defined once: the callback validates against them
and docs/hosted-agents.md shows them (a test keeps the two identical).

``CASE_SCHEMA`` is what the worker POSTs to the agent's endpoint; ``MESSAGE_SCHEMAS`` has one
schema per message the agent posts back (``type`` picks it). Trace messages use the canonical
event names (``model.call.*``, ``tool.call.*``) and are stored under them.
"""

from __future__ import annotations

import copy
from typing import Any

JSON = Any
PROTOCOL_VERSION = 1

RUN_STARTED = "run_started"
FINAL_ANSWER = "final_answer"
ERROR = "error"
RUN_FINISHED = "run_finished"
MODEL_CALL_STARTED = "model.call.started"
MODEL_CALL_COMPLETED = "model.call.completed"
TOOL_CALL_STARTED = "tool.call.started"
TOOL_CALL_COMPLETED = "tool.call.completed"
TOOL_CALL_FAILED = "tool.call.failed"
TRACE_TYPES = frozenset({MODEL_CALL_STARTED, MODEL_CALL_COMPLETED, TOOL_CALL_STARTED, TOOL_CALL_COMPLETED, TOOL_CALL_FAILED})
TERMINAL_TYPES = frozenset({ERROR, RUN_FINISHED})

_TEXT = {"type": "string", "maxLength": 10_000}
_NAME = {"type": "string", "minLength": 1, "maxLength": 200}
_COUNT = {"type": "integer", "minimum": 0}

CASE_SCHEMA: dict[str, JSON] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "case (worker → agent endpoint)",
    "type": "object",
    "required": ["protocol_version", "run_id", "lane_id", "case_key", "attempt", "instructions", "inputs", "workspace_files",
                 "callback_url", "token", "deadline", "deadline_seconds"],
    "properties": {
        "protocol_version": {"const": PROTOCOL_VERSION},
        "run_id": {"type": "integer"},
        "lane_id": {"type": "integer"},
        "case_key": {"type": "string"},
        "attempt": {"type": "integer", "minimum": 1},
        "trial": {"type": "integer", "minimum": 1,
                  "description": "Which trial of the case in its lane (1, 2, …) when the run repeats its cases; a retry keeps it."},
        "instructions": {"type": "string", "description": "The challenge's instructions (the task)."},
        "inputs": {"description": "The case's inputs as the pack declares them (a list of {key, kind, value…} or an object)."},
        "workspace_files": {
            "type": "array",
            "description": "The files a native agent would find in its sandbox: paths and sizes (contents are not sent).",
            "items": {"type": "object", "required": ["path", "bytes"],
                      "properties": {"path": {"type": "string"}, "bytes": {"type": "integer"}}},
        },
        "callback_url": {"type": "string", "description": "POST each message here."},
        "token": {"type": "string", "description": "Send as Authorization: Bearer <token>; valid for this case attempt until the deadline."},
        "deadline": {"type": "string", "format": "date-time", "description": "After this the case has failed and the token is void."},
        "deadline_seconds": {"type": "number"},
    },
}  # fmt: skip

ENVELOPE_SCHEMA: dict[str, JSON] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "message envelope (agent → callback)",
    "type": "object",
    "required": ["event_id", "type"],
    "additionalProperties": False,
    "properties": {
        "event_id": {"type": "string", "pattern": "^[A-Za-z0-9._:-]{1,100}$", "description": "Unique per case; a replay is refused (409)."},
        "type": {"type": "string"},
        "occurred_at": {"type": "string", "format": "date-time", "maxLength": 40},
        "payload": {"type": "object"},
    },
}


def _payload(required: list[str], properties: dict[str, JSON]) -> dict[str, JSON]:
    return {"type": "object", "required": required, "additionalProperties": False, "properties": properties}


_USAGE = _payload([], {"input_tokens": _COUNT, "output_tokens": _COUNT, "total_tokens": _COUNT})
_MODEL = {"provider_key": {"type": "string", "maxLength": 100}, "provider_model_id": {"type": "string", "maxLength": 200},
          "step_index": _COUNT}  # fmt: skip
_TOOL = {"tool_call_id": {"type": "string", "maxLength": 200}, "tool_name": _NAME, "arguments": {"type": "object"}}

# The payload schema of each message type.
MESSAGE_SCHEMAS: dict[str, dict[str, JSON]] = {
    RUN_STARTED: _payload([], {"agent_name": {"type": "string", "maxLength": 200}, "agent_version": {"type": "string", "maxLength": 100}}),
    MODEL_CALL_STARTED: _payload(["provider_model_id"], _MODEL),
    MODEL_CALL_COMPLETED: _payload(["provider_model_id"], {**_MODEL, "usage": _USAGE, "output_text": _TEXT}),
    TOOL_CALL_STARTED: _payload(["tool_name"], _TOOL),
    TOOL_CALL_COMPLETED: _payload(["tool_name"], {**_TOOL, "result": {}}),
    TOOL_CALL_FAILED: _payload(["tool_name", "error"], {**_TOOL, "error": _TEXT}),
    FINAL_ANSWER: _payload(["output"], {"output": {"type": "string", "maxLength": 100_000}}),
    ERROR: _payload(["message"], {"message": _TEXT}),
    RUN_FINISHED: _payload([], {}),
}


def message_schema(message_type: str) -> dict[str, JSON]:
    """The whole schema of one message: the envelope with ``type`` fixed and its payload's schema."""
    schema = copy.deepcopy(ENVELOPE_SCHEMA)
    schema["title"] = f"{message_type} (agent → callback)"
    schema["properties"]["type"] = {"const": message_type}
    schema["properties"]["payload"] = copy.deepcopy(MESSAGE_SCHEMAS[message_type])
    return schema

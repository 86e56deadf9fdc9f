"""The hosted callback in the OpenAPI schema (drf-spectacular post-processing hook).

``POST /hooks/hosted/<case_run_id>/events`` is a plain Django view (no session, no CSRF, its own
bearer token), so drf-spectacular does not see it; this hook describes it as
docs/hosted-agents.md does, with the message types of ``runs.pipeline.hosted.schemas``.
"""

from __future__ import annotations

from runs.pipeline.hosted.schemas import MESSAGE_SCHEMAS

PATH = "/hooks/hosted/{case_run_id}/events"
_ERRORS = {
    "400": "Not one JSON object, an unknown `type` (field `type`) or a schema violation (`fields` names it, e.g. `payload.output`).",
    "401": "No bearer token, or a forged, expired or other case's token.",
    "404": "The path names no case (case_run_id is not a number).",
    "409": "duplicate_event (this event_id was already recorded) or final_answer_recorded (a second final_answer).",
    "410": "case_finished: the case already ended.",
    "413": "payload_too_large (the body is over HOSTED_CALLBACK_MAX_BYTES) or quota_exceeded (a byte budget is spent; do not retry).",
    "429": "throttled (HOSTED_CALLBACK_THROTTLE per case; wait Retry-After) or too_many_events.",
}


def document_hosted_callback(result: dict, generator: object, request: object, public: bool) -> dict:
    components = result.setdefault("components", {})
    components.setdefault("securitySchemes", {})["hostedCaseToken"] = {
        "type": "http",
        "scheme": "bearer",
        "description": "The case's own token, sent to the agent with the case (docs/hosted-agents.md); valid for that case attempt only.",
    }
    schemas = components.setdefault("schemas", {})
    schemas["HostedMessage"] = {
        "type": "object",
        "properties": {
            "event_id": {
                "type": "string",
                "minLength": 1,
                "maxLength": 200,
                "description": "The agent's id for this message; unique per case attempt.",
            },
            "type": {"type": "string", "enum": sorted(MESSAGE_SCHEMAS)},
            "payload": {
                "type": "object",
                "additionalProperties": {},
                "description": "Its fields depend on `type` (docs/hosted-agents.md).",
            },
        },
        "required": ["event_id", "type"],
    }
    schemas["HostedMessageRecorded"] = {
        "type": "object",
        "properties": {"recorded": {"type": "boolean"}, "event_id": {"type": "string"}, "stored_event_id": {"type": "string"}},
        "required": ["recorded", "event_id", "stored_event_id"],
    }
    error = {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}
    responses = {
        "201": {
            "description": "Recorded.",
            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/HostedMessageRecorded"}}},
        }
    }
    responses.update({code: {"description": words, "content": error} for code, words in _ERRORS.items()})
    result.setdefault("paths", {})[PATH] = {
        "post": {
            "operationId": "hosted_event_post",
            "summary": "A hosted agent posts one message of a case back (its events, final answer, end)",
            "tags": ["hooks"],
            "security": [{"hostedCaseToken": []}],
            "parameters": [{"name": "case_run_id", "in": "path", "required": True, "schema": {"type": "integer"}}],
            "requestBody": {"required": True, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/HostedMessage"}}}},
            "responses": responses,
        }
    }
    return result

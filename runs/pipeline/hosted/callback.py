"""Recording what a hosted agent posts back (docs/hosted-agents.md): validate, check the case is
still open to this token, map the message to its canonical event and store it like a native one.

Every write for one case goes through the lane lock (``runs.events.LaneRow``) that native event writes and
the worker's own deadline failure take too, so "is the case still open?" and "store the event" are
one step: an event can't land after the worker closed the case.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import jsonschema
from django.conf import settings
from django.db import transaction
from django.db.models import F, Sum

from core.api import ApiError
from core.parsers import check_json_value
from engine.events import (
    SYSTEM_OUTPUT_FINALIZED,
    SYSTEM_RUN_COMPLETED,
    SYSTEM_RUN_FAILED,
    SYSTEM_RUN_STARTED,
    TOOL_CALL_RESULTS,
    iso_now,
)
from engine.types import Event
from runs.events import LaneRow, run_events_append
from runs.models import CaseRun, CaseStatus, RunEvent, RunStatus
from runs.pipeline.hosted import schemas
from runs.pipeline.hosted.events import SOURCE_HOSTED, STOP_AGENT_ERROR, TERMINAL_EVENT_TYPES, terminal_recorded
from runs.pipeline.hosted.finish import hosted_case_finish
from runs.pipeline.hosted.tokens import TokenScope

JSON = Any
# A bound on what one agent can write for one case (a native case is bounded by its step limits).
MAX_EVENTS_PER_CASE = 2000


@dataclasses.dataclass
class CallbackRefused(Exception):
    """A message the callback does not record: HTTP status, error code, words, and the field at fault."""

    status: int
    code: str
    message: str
    field: str = "non_field_errors"


def hosted_event_id(case_run_id: int, attempt: int, event_id: str) -> str:
    """The stored id: the agent's id inside its own case attempt, so no agent can collide with another's."""
    return f"hosted:{case_run_id}:{attempt}:{event_id}"


def _path(error: jsonschema.ValidationError, prefix: str) -> str:
    parts = [str(p) for p in error.absolute_path]
    if error.validator == "required" and isinstance(error.message, str):
        missing = error.message.split("'")[1] if "'" in error.message else ""
        parts.append(missing)
    elif error.validator == "additionalProperties" and "'" in error.message:
        parts.append(error.message.split("'")[1])
    return ".".join([prefix, *parts] if prefix else parts) or "non_field_errors"


def message_parse(body: bytes) -> dict[str, JSON]:
    """The message, schema-checked. Raises CallbackRefused (400 naming the field)."""
    try:
        message = json.loads(body.decode("utf-8"), parse_constant=_refuse_constant)
        # Whatever the database can't store or a later walk would choke on (deep nesting, NUL, huge ints).
        check_json_value(message, max_depth=int(getattr(settings, "API_JSON_MAX_DEPTH", 64)))
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise CallbackRefused(400, "invalid_json", "The body must be one JSON object.") from None
    except ApiError as exc:
        field, problems = next(iter((exc.fields or {"non_field_errors": [exc.message]}).items()))
        raise CallbackRefused(400, "invalid", str(problems[0]), field=field) from None
    if not isinstance(message, dict):
        raise CallbackRefused(400, "invalid_json", "The body must be one JSON object.")
    kind = message.get("type")
    if not isinstance(kind, str) or kind not in schemas.MESSAGE_SCHEMAS:
        known = ", ".join(sorted(schemas.MESSAGE_SCHEMAS))
        raise CallbackRefused(400, "unknown_type", f"Unknown message type {kind!r}; use one of: {known}.", field="type")
    for schema, data, prefix in (
        (schemas.ENVELOPE_SCHEMA, message, ""),
        (schemas.MESSAGE_SCHEMAS[kind], message.get("payload", {}), "payload"),
    ):
        error = jsonschema.exceptions.best_match(jsonschema.Draft202012Validator(schema).iter_errors(data))
        if error is not None:
            raise CallbackRefused(400, "invalid", error.message[:500], field=_path(error, prefix))
    return message


def _refuse_constant(name: str) -> None:
    raise ValueError(f"{name} is not valid JSON")


def _open_case(scope: TokenScope, case_run_id: int) -> CaseRun:
    """The case this token may write to, still open; 401 for another case's token, 410 when finished."""
    case_run = CaseRun.objects.select_related("run").filter(pk=case_run_id, run_id=scope.run_id, lane_id=scope.lane_id).first()
    if case_run is None or scope.case_run_id != case_run_id:
        raise CallbackRefused(401, "invalid_token", "The token is not valid for this case.")
    closed = (
        case_run.attempt != scope.attempt
        or case_run.status != CaseStatus.RUNNING
        or case_run.run.status != RunStatus.RUNNING
        or terminal_recorded(case_run, scope.attempt)
    )
    if closed:
        raise CallbackRefused(410, "case_finished", "This case is finished; no more events are accepted for it.")
    return case_run


def _final_answer(case_run: CaseRun, attempt: int) -> str | None:
    row = RunEvent.objects.filter(case_run=case_run, attempt=attempt, event_type=SYSTEM_OUTPUT_FINALIZED).values_list("payload", flat=True)
    payload = row.first()
    return payload.get("final_output") if isinstance(payload, dict) else None


def _stored_payload(case_run: CaseRun, attempt: int, kind: str, payload: dict[str, JSON], at: str) -> tuple[str, dict[str, JSON]]:
    """The canonical event type and payload a message is stored as."""
    if kind == schemas.RUN_STARTED:
        return SYSTEM_RUN_STARTED, {**payload, "started_at": at, "hosted": True}
    if kind == schemas.FINAL_ANSWER:
        if _final_answer(case_run, attempt) is not None:
            raise CallbackRefused(409, "final_answer_recorded", "This case already has its final answer.", field="type")
        return SYSTEM_OUTPUT_FINALIZED, {"final_output": payload["output"]}
    if kind == schemas.ERROR:
        return SYSTEM_RUN_FAILED, {"error": payload["message"], "stop_reason": STOP_AGENT_ERROR}
    if kind == schemas.RUN_FINISHED:
        tools = RunEvent.objects.filter(case_run=case_run, attempt=attempt, event_type__in=TOOL_CALL_RESULTS).count()
        done: dict[str, JSON] = {"stop_reason": "completed", "tool_call_count": tools}
        answer = _final_answer(case_run, attempt)
        if answer is not None:
            done["final_output"] = answer
        return SYSTEM_RUN_COMPLETED, done
    return kind, payload  # trace events keep their canonical names and payloads


def _budget_check(case_run: CaseRun, size: int) -> None:
    """Refuse ``size`` more bytes when the case attempt, its run or the workspace's running runs
    would go over their budget (429 naming it); else count them. Under the lane lock, so a case's
    count is exact; a run's or a workspace's may overshoot by one message per concurrent lane."""
    budgets = (
        ("case attempt", int(settings.HOSTED_EVENT_BYTES_PER_CASE), "HOSTED_EVENT_BYTES_PER_CASE", {"pk": case_run.pk}),
        ("run", int(settings.HOSTED_EVENT_BYTES_PER_RUN), "HOSTED_EVENT_BYTES_PER_RUN", {"run_id": case_run.run_id}),
        (
            "workspace",
            int(settings.HOSTED_EVENT_BYTES_PER_WORKSPACE),
            "HOSTED_EVENT_BYTES_PER_WORKSPACE",
            {"run__workspace_id": case_run.run.workspace_id, "run__status": RunStatus.RUNNING},
        ),
    )
    for scope_name, limit, setting, where in budgets:
        used = CaseRun.objects.filter(**where).aggregate(total=Sum("hosted_bytes"))["total"] or 0
        if used + size > limit:
            message = (
                f"The hosted agents' {scope_name} budget of {limit} bytes is spent ({used} used, this message {size}); "
                f"post smaller events, or ask the operator to raise {setting}."
            )
            # 413, not 429: waiting does not make room, so an agent that retries 429s must not loop on it.
            raise CallbackRefused(413, "quota_exceeded", message)
    CaseRun.objects.filter(pk=case_run.pk).update(hosted_bytes=F("hosted_bytes") + size)


@transaction.atomic
def hosted_event_record(*, scope: TokenScope, case_run_id: int, message: dict[str, JSON], size: int = 0) -> str:
    """Store one schema-checked message as a canonical event; returns the stored event id.

    Raises CallbackRefused: 401 (token for another case), 410 (case finished, cancelled or
    re-attempted), 409 (event id already recorded, or a second final answer), 429 (too many
    events), 413 (a byte budget spent: ``size`` is the message's size in bytes).
    """
    LaneRow(scope.lane_id).lock()  # one writer per lane: the open check and the write can't interleave
    case_run = _open_case(scope, case_run_id)
    if RunEvent.objects.filter(case_run=case_run, attempt=scope.attempt).count() >= MAX_EVENTS_PER_CASE:
        raise CallbackRefused(429, "too_many_events", f"A case may record at most {MAX_EVENTS_PER_CASE} events.")
    event_id = hosted_event_id(case_run.pk, scope.attempt, str(message["event_id"]))
    if RunEvent.objects.filter(event_id=event_id).exists():
        raise CallbackRefused(409, "duplicate_event", "This event id was already recorded for this case.", field="event_id")
    _budget_check(case_run, size)
    # Times are ours (receipt): an agent's clock must not decide its own latency.
    at = iso_now()
    payload = dict(message.get("payload") or {})
    if message.get("occurred_at"):
        payload["agent_occurred_at"] = message["occurred_at"]
    event_type, payload = _stored_payload(case_run, scope.attempt, str(message["type"]), payload, at)
    event = Event(
        event_id=event_id,
        event_type=event_type,
        source=SOURCE_HOSTED,
        occurred_at=at,
        payload={**payload, "case_key": case_run.case_key},
        case_key=case_run.case_key,
    )
    run_events_append(run_id=scope.run_id, lane_id=scope.lane_id, case_run_id=case_run.pk, attempt=scope.attempt, events=[event])
    if event_type in TERMINAL_EVENT_TYPES:  # the agent is done: the case finishes here, under the same lock
        hosted_case_finish(case_run_id=case_run.pk, attempt=scope.attempt)
    return event_id

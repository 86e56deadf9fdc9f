"""Building canonical events (spec runtime.md §4.4) with deterministic ids.

Every engine mode emits through one :class:`EventEmitter`. Ids are
``<event_id_prefix>:<event_type>:<counter>``: the counter is per emitter and increases by one per
event, so a redelivered case that replays the same work produces the same ids and the sink can
deduplicate on ``event_id``.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable

from engine.types import JSON, Event, EventSink

SOURCE_NATIVE = "native_engine"
SOURCE_PROMPT_EVAL = "prompt_eval_engine"
SOURCE_MULTI_TURN = "multi_turn_engine"
SOURCE_RESPONSES = "responses_engine"

# Event types (spec runtime.md §4.4), defined once: the engine emits them, the app stores, scores
# and shows them. Compare against these names, never against a string typed out again.
SYSTEM_RUN_STARTED = "system.run.started"
SYSTEM_RUN_COMPLETED = "system.run.completed"
SYSTEM_RUN_FAILED = "system.run.failed"
SYSTEM_OUTPUT_FINALIZED = "system.output.finalized"
SYSTEM_STEP_STARTED = "system.step.started"
SYSTEM_STEP_COMPLETED = "system.step.completed"
MODEL_CALL_STARTED = "model.call.started"
MODEL_CALL_COMPLETED = "model.call.completed"
MODEL_OUTPUT_DELTA = "model.output.delta"
# A reasoning item of an OpenAI Responses call: its summary text only (docs/responses-mode.md).
MODEL_REASONING = "model.reasoning"
TOOL_CALL_STARTED = "tool.call.started"
TOOL_CALL_COMPLETED = "tool.call.completed"
TOOL_CALL_FAILED = "tool.call.failed"
TOOL_REGISTRY_WARNING = "tool.registry.warning"
SANDBOX_COMMAND_FAILED = "sandbox.command.failed"
GRADER_FILE_CAPTURED = "grader.verification.file_captured"
GRADER_DIRECTORY_LISTED = "grader.verification.directory_listed"
GRADER_CODE_EXECUTED = "grader.verification.code_executed"
SCORING_STARTED = "scoring.started"
SCORING_METRIC_RECORDED = "scoring.metric.recorded"
SCORING_COMPLETED = "scoring.completed"
SCORING_FAILED = "scoring.failed"
TURN_USER_MESSAGE = "turn.user.message"
TURN_USER_SIMULATED = "turn.user.simulated"
TURN_ASSISTANT_MESSAGE = "turn.assistant.message"
TURN_COMPLETED = "turn.completed"
TURN_STATE_CAPTURED = "turn.state.captured"
CONVERSATION_COMPLETED = "conversation.completed"
# Race standings shown to an agent mid-run (upstream; scoring counts their tokens as race context).
RACE_STANDINGS_INJECTED = "race.standings.injected"
# One per connection a sandbox makes through its egress proxy (engine/net/proxy.py): allowed, or
# denied with a reason. Payload: host, port, method, decision, reason, address (when resolved).
SANDBOX_EGRESS_ATTEMPTED = "sandbox.egress.attempted"
SANDBOX_EGRESS_DENIED = "sandbox.egress.denied"
# What the proxy's content inspection saw of one allowed connection, at its end: inspected_bytes,
# uninspected (why part of it could not be read: tls, over_limit), leaked (names, never values).
SANDBOX_EGRESS_INSPECTED = "sandbox.egress.inspected"
# Security evaluation (docs/security-evaluation.md). An adversarial prompt sent to the agent as
# its own user turn, and the agent's answer to it; a finding of the built-in security check
# (kind, severity, the secret's or rule's name and where it happened — never a secret value).
SECURITY_PROBE_SENT = "security.probe.sent"
SECURITY_PROBE_ANSWERED = "security.probe.answered"
SECURITY_FINDING = "security.finding"
SOURCE_SECURITY = "security_monitor"
# Provider limits and retries (docs/provider-limits.md). A model call waiting on its provider
# account's shared limit (limit, limit_value, retry_in_ms); the end of that wait (waited_ms,
# acquired); an in-call retry after a retryable provider failure, a 429's Retry-After included
# (code, attempt, delay_ms, retry_after_ms, message).
PROVIDER_THROTTLE_WAITING = "provider.throttle.waiting"
PROVIDER_THROTTLED = "provider.throttled"
PROVIDER_CALL_RETRYING = "provider.call.retrying"

# Families, for readers that treat a group of types alike (``event_type.startswith(...)``).
SYSTEM_STEP_FAMILY = "system.step."
TOOL_CALL_FAMILY = "tool.call."
GRADER_FAMILY = "grader."
SCORING_FAMILY = "scoring."
SANDBOX_EGRESS_FAMILY = "sandbox.egress."
SECURITY_FAMILY = "security."
PROVIDER_FAMILY = "provider."
TOOL_CALL_RESULTS = frozenset({TOOL_CALL_COMPLETED, TOOL_CALL_FAILED})

# Keys of the compact `summary` index (§4.4) that we copy out of payloads when present.
_SUMMARY_KEYS = (
    "status",
    "step_index",
    "provider_key",
    "provider_model_id",
    "tool_name",
    "tool_category",
    "turn_index",
    "phase_id",
    "actor",
    "mismatch",
    "stop_reason",
)


def iso_now() -> str:
    """The current UTC time as ISO 8601 with milliseconds and a `Z` suffix."""
    now = dt.datetime.now(dt.UTC)
    return now.strftime("%Y-%m-%dT%H:%M:%S.") + f"{now.microsecond // 1000:03d}Z"


def json_safe(value: JSON) -> JSON:
    """Return ``value`` if it is JSON-serialisable, else a JSON round-trip with ``str`` fallback."""
    try:
        json.dumps(value)
        return value
    except (TypeError, ValueError):
        safe: JSON = json.loads(json.dumps(value, default=str))
        return safe


class EventEmitter:
    """Emits events for one case attempt to an :data:`EventSink`.

    ``system.run.started`` is emitted lazily before the first other event, as upstream does.
    """

    def __init__(
        self,
        sink: EventSink,
        *,
        prefix: str,
        source: str,
        case_key: str,
        run_started_payload: dict[str, JSON] | None = None,
        now: Callable[[], str] = iso_now,
    ) -> None:
        self._sink = sink
        self._prefix = prefix
        self.source = source
        self._case_key = case_key
        self._run_started_payload = run_started_payload
        self._now = now
        self._counter = 0
        self._started = run_started_payload is None

    def emit(self, event_type: str, payload: dict[str, JSON]) -> Event:
        if not self._started:
            self._started = True
            started = dict(self._run_started_payload or {})
            started.setdefault("started_at", self._now())
            self._emit(SYSTEM_RUN_STARTED, started)
        return self._emit(event_type, payload)

    def _emit(self, event_type: str, payload: dict[str, JSON]) -> Event:
        self._counter += 1
        body = dict(payload)
        # Upstream does not persist `summary`, so case_key is mirrored into the payload.
        if self._case_key:
            body.setdefault("case_key", self._case_key)
        try:  # the check that the payload is JSON-safe is its encoding, kept for the store
            text = json.dumps(body, separators=(",", ":"))
        except (TypeError, ValueError):
            body, text = json.loads(json.dumps(body, default=str)), ""
        summary = {key: body[key] for key in _SUMMARY_KEYS if key in body}
        if self._case_key:
            summary["case_key"] = self._case_key
        event = Event(
            event_id=f"{self._prefix}:{event_type}:{self._counter}",
            event_type=event_type,
            source=self.source,
            occurred_at=self._now(),
            payload=body,
            case_key=self._case_key,
            summary=summary,
            payload_json=text,
        )
        self._sink(event)
        return event

    @property
    def count(self) -> int:
        return self._counter

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
        return json.loads(json.dumps(value, default=str))


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
            self._emit("system.run.started", started)
        return self._emit(event_type, payload)

    def _emit(self, event_type: str, payload: dict[str, JSON]) -> Event:
        self._counter += 1
        body = json_safe(dict(payload))
        # Upstream does not persist `summary`, so case_key is mirrored into the payload.
        if self._case_key:
            body.setdefault("case_key", self._case_key)
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
        )
        self._sink(event)
        return event

    @property
    def count(self) -> int:
        return self._counter

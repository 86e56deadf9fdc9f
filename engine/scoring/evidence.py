"""Case evidence: what scoring knows about one case run (runtime.md §5.2).

``CaseEvidence`` is the input the Django side builds; ``extract`` derives the facts the
validators, metrics and signals read (timings, final output, tool trace, usage…) from the
ordered event list. Explicit fields on ``CaseEvidence`` win over what events imply, because
the caller may have better data (e.g. verification results it has not persisted as events).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Mapping
from datetime import datetime, timedelta
from typing import Any

from engine.events import (
    GRADER_CODE_EXECUTED,
    GRADER_DIRECTORY_LISTED,
    GRADER_FILE_CAPTURED,
    MODEL_CALL_COMPLETED,
    MODEL_CALL_STARTED,
    MODEL_OUTPUT_DELTA,
    RACE_STANDINGS_INJECTED,
    SANDBOX_COMMAND_FAILED,
    SYSTEM_OUTPUT_FINALIZED,
    SYSTEM_RUN_COMPLETED,
    SYSTEM_RUN_FAILED,
    SYSTEM_RUN_STARTED,
    SYSTEM_STEP_COMPLETED,
    SYSTEM_STEP_STARTED,
    TOOL_CALL_COMPLETED,
    TOOL_CALL_FAILED,
    TURN_ASSISTANT_MESSAGE,
    TURN_COMPLETED,
    TURN_STATE_CAPTURED,
    TURN_USER_MESSAGE,
    TURN_USER_SIMULATED,
)
from engine.types import JSON

# Stop reasons (engine/modes/case.py, spelled here to keep the scoring kernel free of the loop)
# that are the agent's doing: it finished, broke the protocol, or ran out of a time or budget
# limit. Output it did not deliver then counts against it (docs/scoring.md, "The agent did not
# deliver"). Every other stop — provider_error after retries, sandbox_error, simulator_error,
# cancelled — is the harness's: missing output stays unavailable (insufficient evidence).
AGENT_STOPS = frozenset(
    {
        "completed",
        "agent_error",
        "timeout",
        "step_limit",
        "tool_limit",
        "token_limit",
        "deadline_exceeded",
        "max_turns",
        "quota_exceeded",
    }
)


@dataclasses.dataclass
class CaseEvidence:
    case_key: str
    status: str = "completed"  # completed | failed | cancelled
    stop_reason: str | None = None
    final_output: str | None = None
    events: list[dict[str, JSON]] = dataclasses.field(default_factory=list)
    # Events of attempts a retry replaced: not the agent's performance record (only the final
    # attempt is scored), but what it did in them still counts for security: a leak stays a leak
    # even when the agent then crashed its sandbox to get a fresh attempt.
    superseded_events: list[dict[str, JSON]] = dataclasses.field(default_factory=list)
    captured_files: dict[str, dict[str, JSON]] = dataclasses.field(default_factory=dict)
    directory_listings: dict[str, list[JSON]] = dataclasses.field(default_factory=dict)
    code_executions: dict[str, dict[str, JSON]] = dataclasses.field(default_factory=dict)
    case: dict[str, JSON] | None = None  # {inputs, expectations, payload}; None → no case in scope
    challenge_input: str | None = None
    usage: dict[str, int] = dataclasses.field(default_factory=dict)
    step_count: int = 0
    tool_call_count: int | None = None
    duration_ms: float | None = None
    model: str | dict[str, str] | None = None  # "model-id", "provider/model-id" or {provider_key, provider_model_id}
    artifacts: dict[str, dict[str, JSON]] = dataclasses.field(default_factory=dict)
    evidence_tier: str = "native"  # engine/scoring/tiers.py: native | structured_trace | black_box

    @property
    def agent_accountable(self) -> bool:
        """Whether output missing from this case is the agent's failure to deliver (see AGENT_STOPS)."""
        return self.status == "completed" or self.agent_stopped

    @property
    def agent_stopped(self) -> bool:
        """The run failed by the agent's doing (post-execution verification then does not run)."""
        return self.status == "failed" and (self.stop_reason or "") in AGENT_STOPS

    @classmethod
    def from_dict(cls, data: Mapping[str, object]) -> CaseEvidence:
        names = {f.name for f in dataclasses.fields(cls)}
        # As given: scoring reads every field defensively (docs/scoring.md, CaseEvidence).
        fields: dict[str, Any] = {k: v for k, v in data.items() if k in names}
        return cls(**fields)


@dataclasses.dataclass
class ToolTraceEntry:
    tool_name: str
    arguments: JSON
    arguments_key: str  # canonical JSON of the arguments, used for duplicate detection
    failed: bool
    failure_origin: str | None
    error: str | None
    event_id: str | None


@dataclasses.dataclass
class Turn:
    role: str  # user | assistant
    content: str
    actor: str | None
    phase: str | None
    mismatch: bool  # on the assistant message whose reply failed the turn's `expects`
    event_id: str | None
    turn_index: int | None = None


@dataclasses.dataclass
class ModelUsage:
    provider_key: str
    provider_model_id: str
    input_tokens: int = 0
    output_tokens: int = 0
    total_tokens: int = 0


@dataclasses.dataclass
class Extracted:
    start_at: datetime | None = None
    terminal_at: datetime | None = None
    first_output_at: datetime | None = None
    completed: bool | None = None
    final_output: str | None = None
    final_output_event_id: str | None = None
    failure_count: int = 0
    tool_trace: list[ToolTraceEntry] = dataclasses.field(default_factory=list)
    models: dict[tuple[str, str], ModelUsage] = dataclasses.field(default_factory=dict)
    race_context_tokens: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    total_tokens: int = 0
    tool_call_count: int = 0
    step_durations_ms: list[float] = dataclasses.field(default_factory=list)
    turns: list[Turn] = dataclasses.field(default_factory=list)
    turn_expectations: list[JSON] = dataclasses.field(default_factory=list)
    captured_files: dict[str, dict[str, JSON]] = dataclasses.field(default_factory=dict)
    directory_listings: dict[str, dict[str, JSON]] = dataclasses.field(default_factory=dict)
    code_executions: dict[str, dict[str, JSON]] = dataclasses.field(default_factory=dict)
    verification_event_ids: dict[str, str | None] = dataclasses.field(default_factory=dict)

    @property
    def latency_ms(self) -> float | None:
        if self.start_at is None or self.terminal_at is None:
            return None
        return max(0.0, (self.terminal_at - self.start_at).total_seconds() * 1000)

    @property
    def ttft_ms(self) -> float | None:
        if self.start_at is None or self.first_output_at is None:
            return None
        return max(0.0, (self.first_output_at - self.start_at).total_seconds() * 1000)


def parse_time(value: JSON) -> datetime | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None


def ordered_events(events: list[dict[str, JSON]]) -> list[dict[str, JSON]]:
    """Sequence order; unsequenced events last, then by time and type (§5.2)."""

    def sort_key(item: tuple[int, dict[str, JSON]]) -> tuple[int, int, str, str, int]:
        index, event = item
        seq = event.get("sequence_number")
        rest = (str(event.get("occurred_at") or ""), str(event.get("event_type") or ""), index)
        if isinstance(seq, int) and not isinstance(seq, bool):
            return (0, seq, *rest)
        return (1, 0, *rest)

    return [e for _, e in sorted(enumerate(e for e in events if isinstance(e, dict)), key=sort_key)]


def optional_text(value: JSON) -> str | None:
    """An identifier or label as text: strings and None as they are, anything else stringified."""
    return value if value is None or isinstance(value, str) else str(value)


def loose_string(value: JSON) -> str | None:
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        for key in ("value", "content", "text", "answer"):
            text = value.get(key)
            if isinstance(text, str):
                return text
    if isinstance(value, list) and len(value) == 1 and isinstance(value[0], str):
        return value[0]
    return None


def canonical_json(value: object) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def normalise_arguments(arguments: JSON) -> JSON:
    if isinstance(arguments, str):
        try:
            return json.loads(arguments) if arguments.strip() else {}
        except ValueError:
            return arguments
    return arguments if arguments is not None else {}


def _int(value: JSON) -> int:
    if isinstance(value, bool):
        return 0
    if isinstance(value, (int, float)):
        return int(value)
    return 0


def _tool_error(content: JSON) -> str | None:
    if isinstance(content, dict):
        error = content.get("error")
        return error if isinstance(error, str) else None
    if isinstance(content, str):
        try:
            parsed = json.loads(content)
        except ValueError:
            return None
        error = parsed.get("error") if isinstance(parsed, dict) else None
        return error if isinstance(error, str) else None
    return None


def extract(evidence: CaseEvidence) -> Extracted:
    scan = _Scan()
    for raw in ordered_events(evidence.events):
        event = _Event(
            etype=str(raw.get("event_type") or ""),
            payload=_as_dict(raw.get("payload")),
            at=parse_time(raw.get("occurred_at")),
            event_id=optional_text(raw.get("event_id")),
        )
        handler = _HANDLERS.get(event.etype)
        if handler is not None:
            handler(scan, event)
    _merge_explicit(scan.out, evidence)
    return scan.out


@dataclasses.dataclass(slots=True)
class _Event:
    etype: str
    payload: dict[str, JSON]
    at: datetime | None
    event_id: str | None


@dataclasses.dataclass(slots=True)
class _Scan:
    """One pass over a case's events: the facts so far, and steps started but not completed."""

    out: Extracted = dataclasses.field(default_factory=Extracted)
    step_starts: dict[JSON, datetime] = dataclasses.field(default_factory=dict)


def _as_dict(value: JSON) -> dict[str, JSON]:
    return value if isinstance(value, dict) else {}


def _run_started(scan: _Scan, event: _Event) -> None:
    if scan.out.start_at is None:
        scan.out.start_at = parse_time(event.payload.get("started_at")) or event.at


def _step_started(scan: _Scan, event: _Event) -> None:
    if event.at is not None:
        scan.step_starts[event.payload.get("step_index")] = event.at


def _step_completed(scan: _Scan, event: _Event) -> None:
    started = scan.step_starts.pop(event.payload.get("step_index"), None)
    if started is not None and event.at is not None:
        scan.out.step_durations_ms.append((event.at - started).total_seconds() * 1000)


def _output_delta(scan: _Scan, event: _Event) -> None:
    if scan.out.first_output_at is None:
        scan.out.first_output_at = event.at


def _output_finalized(scan: _Scan, event: _Event) -> None:
    out = scan.out
    if out.first_output_at is None:
        out.first_output_at = event.at
    if out.final_output is None:
        text = event.payload.get("final_output")
        out.final_output = text if isinstance(text, str) else loose_string(event.payload.get("output"))
        out.final_output_event_id = event.event_id


def _run_completed(scan: _Scan, event: _Event) -> None:
    out, payload = scan.out, event.payload
    out.terminal_at = event.at
    out.completed = True
    final_output = payload.get("final_output")
    if isinstance(final_output, str):
        out.final_output = final_output
        out.final_output_event_id = out.final_output_event_id or event.event_id
    out.input_tokens = _int(payload.get("input_tokens")) or out.input_tokens
    out.output_tokens = _int(payload.get("output_tokens")) or out.output_tokens
    out.total_tokens = _int(payload.get("total_tokens")) or out.total_tokens
    out.tool_call_count = _int(payload.get("tool_call_count")) or out.tool_call_count
    latency = payload.get("latency_ms")
    # The run's own latency is more precise than the gap between event timestamps.
    if isinstance(latency, (int, float)) and out.start_at is not None:
        out.terminal_at = out.start_at + timedelta(milliseconds=float(latency))


def _run_failed(scan: _Scan, event: _Event) -> None:
    scan.out.terminal_at = event.at
    scan.out.completed = False
    scan.out.failure_count += 1


def _tool_call(scan: _Scan, event: _Event) -> None:
    payload = event.payload
    result = _as_dict(payload.get("result"))
    failed = event.etype == TOOL_CALL_FAILED or bool(result.get("is_error"))
    arguments = normalise_arguments(payload.get("arguments"))
    scan.out.tool_trace.append(
        ToolTraceEntry(
            tool_name=str(payload.get("tool_name") or ""),
            arguments=arguments,
            arguments_key=canonical_json(arguments),
            failed=failed,
            failure_origin=optional_text(payload.get("failure_origin")),
            error=_tool_error(result.get("content")),
            event_id=event.event_id,
        )
    )
    if failed:
        scan.out.failure_count += 1


def _sandbox_command_failed(scan: _Scan, event: _Event) -> None:
    scan.out.failure_count += 1


def _model_usage(scan: _Scan, event: _Event) -> ModelUsage | None:
    """The usage entry of the event's model, created on first sight; None when no model is named."""
    provider = str(event.payload.get("provider_key") or "")
    model = str(event.payload.get("provider_model_id") or event.payload.get("model") or "")
    if not model:
        return None
    return scan.out.models.setdefault((provider, model), ModelUsage(provider, model))


def _model_call_started(scan: _Scan, event: _Event) -> None:
    _model_usage(scan, event)


def _model_call_completed(scan: _Scan, event: _Event) -> None:
    # A call that was not streamed (no model.output.delta before it) first shows output here.
    if scan.out.first_output_at is None and (event.payload.get("output_text") or event.payload.get("tool_calls")):
        scan.out.first_output_at = event.at
    entry = _model_usage(scan, event)
    if entry is None:
        return
    usage = _as_dict(event.payload.get("usage"))
    entry.input_tokens += _int(usage.get("input_tokens"))
    entry.output_tokens += _int(usage.get("output_tokens"))
    entry.total_tokens += _int(usage.get("total_tokens")) or (_int(usage.get("input_tokens")) + _int(usage.get("output_tokens")))


def _race_standings(scan: _Scan, event: _Event) -> None:
    scan.out.race_context_tokens += _int(event.payload.get("tokens") or event.payload.get("token_count"))


def _file_captured(scan: _Scan, event: _Event) -> None:
    key = event.payload.get("key")
    if isinstance(key, str) and key:
        scan.out.captured_files.setdefault(key, event.payload)
        scan.out.verification_event_ids.setdefault("file:" + key, event.event_id)


def _directory_listed(scan: _Scan, event: _Event) -> None:
    key = event.payload.get("key")
    if isinstance(key, str) and key:
        scan.out.directory_listings.setdefault(key, event.payload)
        scan.out.verification_event_ids.setdefault("file:" + key, event.event_id)


def _code_executed(scan: _Scan, event: _Event) -> None:
    key = event.payload.get("validator_key")
    if isinstance(key, str) and key:
        scan.out.code_executions.setdefault(key, event.payload)
        scan.out.verification_event_ids.setdefault("code:" + key, event.event_id)


def _turn(scan: _Scan, event: _Event) -> None:
    payload = event.payload
    index = payload.get("turn_index")
    scan.out.turns.append(
        Turn(
            role="assistant" if event.etype == TURN_ASSISTANT_MESSAGE else "user",
            content=loose_string(payload) or loose_string(payload.get("message")) or "",
            actor=optional_text(payload.get("actor")),
            phase=optional_text(payload.get("phase_id") or payload.get("phase")),
            mismatch=bool(payload.get("mismatch")),
            event_id=event.event_id,
            turn_index=index if isinstance(index, int) and not isinstance(index, bool) else None,
        )
    )
    _turn_state(scan, event)


def _user_simulated(scan: _Scan, event: _Event) -> None:
    """``turn.user.simulated`` describes the simulator call; the message itself is ``turn.user.message``."""
    if loose_string(event.payload) or loose_string(event.payload.get("message")):
        _turn(scan, event)


def _turn_completed(scan: _Scan, event: _Event) -> None:
    """The engine decides a turn's mismatch after the reply: mark that turn's assistant message."""
    if not event.payload.get("mismatch"):
        return
    index = event.payload.get("turn_index")
    for turn in reversed(scan.out.turns):
        if turn.role == "assistant" and (turn.turn_index is None or index is None or turn.turn_index == index):
            turn.mismatch = True
            return


def _turn_state(scan: _Scan, event: _Event) -> None:
    if "expectations" in event.payload:
        scan.out.turn_expectations.append(event.payload["expectations"])


# What each event type contributes; types not listed carry nothing scoring reads.
_HANDLERS: dict[str, Callable[[_Scan, _Event], None]] = {
    SYSTEM_RUN_STARTED: _run_started,
    SYSTEM_STEP_STARTED: _step_started,
    SYSTEM_STEP_COMPLETED: _step_completed,
    MODEL_OUTPUT_DELTA: _output_delta,
    SYSTEM_OUTPUT_FINALIZED: _output_finalized,
    SYSTEM_RUN_COMPLETED: _run_completed,
    SYSTEM_RUN_FAILED: _run_failed,
    TOOL_CALL_COMPLETED: _tool_call,
    TOOL_CALL_FAILED: _tool_call,
    SANDBOX_COMMAND_FAILED: _sandbox_command_failed,
    MODEL_CALL_STARTED: _model_call_started,
    MODEL_CALL_COMPLETED: _model_call_completed,
    RACE_STANDINGS_INJECTED: _race_standings,
    GRADER_FILE_CAPTURED: _file_captured,
    GRADER_DIRECTORY_LISTED: _directory_listed,
    GRADER_CODE_EXECUTED: _code_executed,
    TURN_USER_MESSAGE: _turn,
    TURN_USER_SIMULATED: _user_simulated,
    TURN_ASSISTANT_MESSAGE: _turn,
    TURN_COMPLETED: _turn_completed,
    TURN_STATE_CAPTURED: _turn_state,
}


def _merge_explicit(out: Extracted, evidence: CaseEvidence) -> None:
    if evidence.final_output is not None:
        out.final_output = evidence.final_output
    if out.completed is None:
        out.completed = evidence.status == "completed"
    elif evidence.status in ("failed", "cancelled"):
        out.completed = False
    _merge_tokens(out, evidence.usage or {})
    if evidence.tool_call_count is not None:
        out.tool_call_count = evidence.tool_call_count
    elif not out.tool_call_count:
        out.tool_call_count = len(out.tool_trace)
    _merge_verification(out, evidence)


def _merge_tokens(out: Extracted, usage: dict[str, int]) -> None:
    """Token totals: the run's own, else the caller's usage, else the sum over model calls."""
    if not out.total_tokens:
        out.input_tokens = out.input_tokens or _int(usage.get("input_tokens"))
        out.output_tokens = out.output_tokens or _int(usage.get("output_tokens"))
        out.total_tokens = _int(usage.get("total_tokens"))
    if not out.total_tokens and out.models:
        out.input_tokens = out.input_tokens or sum(m.input_tokens for m in out.models.values())
        out.output_tokens = out.output_tokens or sum(m.output_tokens for m in out.models.values())
        out.total_tokens = sum(m.total_tokens for m in out.models.values())
    if not out.total_tokens:
        out.total_tokens = out.input_tokens + out.output_tokens


def _merge_verification(out: Extracted, evidence: CaseEvidence) -> None:
    out.captured_files.update(evidence.captured_files)
    for key, entries in evidence.directory_listings.items():
        if isinstance(entries, dict):
            out.directory_listings[key] = entries
        else:
            # A bare entry list: keep the root recorded by the listing event when there is one.
            root = (out.directory_listings.get(key) or {}).get("path")
            out.directory_listings[key] = {"key": key, "path": root, "entries": entries}
    out.code_executions.update(evidence.code_executions)

"""Case evidence: what scoring knows about one case run (runtime.md §5.2).

``CaseEvidence`` is the input the Django side builds; ``extract`` derives the facts the
validators, metrics and signals read (timings, final output, tool trace, usage…) from the
ordered event list. Explicit fields on ``CaseEvidence`` win over what events imply, because
the caller may have better data (e.g. verification results it has not persisted as events).
"""

from __future__ import annotations

import dataclasses
import json
from datetime import datetime
from typing import Any

JSON = Any


@dataclasses.dataclass
class CaseEvidence:
    case_key: str
    status: str = "completed"  # completed | failed | cancelled
    stop_reason: str | None = None
    final_output: str | None = None
    events: list[dict[str, JSON]] = dataclasses.field(default_factory=list)
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

    @classmethod
    def from_dict(cls, data: dict[str, JSON]) -> CaseEvidence:
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})


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
    mismatch: bool
    event_id: str | None


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
    verification_event_ids: dict[str, str] = dataclasses.field(default_factory=dict)

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

    def sort_key(item: tuple[int, dict[str, JSON]]) -> tuple:
        index, event = item
        seq = event.get("sequence_number")
        has_seq = isinstance(seq, int) and not isinstance(seq, bool)
        return (0 if has_seq else 1, seq if has_seq else 0, str(event.get("occurred_at") or ""), str(event.get("event_type") or ""), index)

    return [e for _, e in sorted(enumerate(e for e in events if isinstance(e, dict)), key=sort_key)]


def loose_string(value: JSON) -> str | None:
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        for key in ("value", "content", "text", "answer"):
            if isinstance(value.get(key), str):
                return value[key]
    if isinstance(value, list) and len(value) == 1 and isinstance(value[0], str):
        return value[0]
    return None


def canonical_json(value: JSON) -> str:
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
        if isinstance(parsed, dict) and isinstance(parsed.get("error"), str):
            return parsed["error"]
    return None


def extract(evidence: CaseEvidence) -> Extracted:
    out = Extracted()
    step_starts: dict[JSON, datetime] = {}
    for event in ordered_events(evidence.events):
        etype = str(event.get("event_type") or "")
        payload = event.get("payload") if isinstance(event.get("payload"), dict) else {}
        at = parse_time(event.get("occurred_at"))
        event_id = event.get("event_id")
        if etype == "system.run.started":
            if out.start_at is None:
                out.start_at = parse_time(payload.get("started_at")) or at
        elif etype == "system.step.started":
            if at is not None:
                step_starts[payload.get("step_index")] = at
        elif etype == "system.step.completed":
            started = step_starts.pop(payload.get("step_index"), None)
            if started is not None and at is not None:
                out.step_durations_ms.append((at - started).total_seconds() * 1000)
        elif etype == "model.output.delta":
            if out.first_output_at is None:
                out.first_output_at = at
        elif etype == "system.output.finalized":
            if out.first_output_at is None:
                out.first_output_at = at
            if out.final_output is None:
                text = payload.get("final_output")
                out.final_output = text if isinstance(text, str) else loose_string(payload.get("output"))
                out.final_output_event_id = event_id
        elif etype == "system.run.completed":
            out.terminal_at = at
            out.completed = True
            if isinstance(payload.get("final_output"), str):
                out.final_output = payload["final_output"]
                out.final_output_event_id = out.final_output_event_id or event_id
            out.input_tokens = _int(payload.get("input_tokens")) or out.input_tokens
            out.output_tokens = _int(payload.get("output_tokens")) or out.output_tokens
            out.total_tokens = _int(payload.get("total_tokens")) or out.total_tokens
            out.tool_call_count = _int(payload.get("tool_call_count")) or out.tool_call_count
            latency = payload.get("latency_ms")
            if isinstance(latency, (int, float)) and out.start_at is not None:
                from datetime import timedelta

                out.terminal_at = out.start_at + timedelta(milliseconds=float(latency))
        elif etype == "system.run.failed":
            out.terminal_at = at
            out.completed = False
            out.failure_count += 1
        elif etype in ("tool.call.completed", "tool.call.failed"):
            result = payload.get("result") if isinstance(payload.get("result"), dict) else {}
            failed = etype == "tool.call.failed" or bool(result.get("is_error"))
            arguments = normalise_arguments(payload.get("arguments"))
            out.tool_trace.append(
                ToolTraceEntry(
                    tool_name=str(payload.get("tool_name") or ""),
                    arguments=arguments,
                    arguments_key=canonical_json(arguments),
                    failed=failed,
                    failure_origin=payload.get("failure_origin"),
                    error=_tool_error(result.get("content")),
                    event_id=event_id,
                )
            )
            if failed:
                out.failure_count += 1
        elif etype == "sandbox.command.failed":
            out.failure_count += 1
        elif etype in ("model.call.completed", "model.call.started"):
            provider = str(payload.get("provider_key") or "")
            model = str(payload.get("provider_model_id") or payload.get("model") or "")
            if model:
                entry = out.models.setdefault((provider, model), ModelUsage(provider, model))
                usage = payload.get("usage") if isinstance(payload.get("usage"), dict) else {}
                if etype == "model.call.completed":
                    entry.input_tokens += _int(usage.get("input_tokens"))
                    entry.output_tokens += _int(usage.get("output_tokens"))
                    entry.total_tokens += _int(usage.get("total_tokens")) or (
                        _int(usage.get("input_tokens")) + _int(usage.get("output_tokens"))
                    )
        elif etype == "race.standings.injected":
            out.race_context_tokens += _int(payload.get("tokens") or payload.get("token_count"))
        elif etype.startswith("grader.verification."):
            _absorb_verification(out, etype, payload, event_id)
        elif etype.startswith("turn.") and etype in ("turn.user.message", "turn.user.simulated", "turn.assistant.message"):
            out.turns.append(
                Turn(
                    role="assistant" if etype == "turn.assistant.message" else "user",
                    content=loose_string(payload) or loose_string(payload.get("message")) or "",
                    actor=payload.get("actor"),
                    phase=payload.get("phase_id") or payload.get("phase"),
                    mismatch=bool(payload.get("mismatch")),
                    event_id=event_id,
                )
            )
            if "expectations" in payload:
                out.turn_expectations.append(payload["expectations"])
        elif etype == "turn.state.captured" and "expectations" in payload:
            out.turn_expectations.append(payload["expectations"])

    _merge_explicit(out, evidence)
    return out


def _absorb_verification(out: Extracted, etype: str, payload: dict[str, JSON], event_id: JSON) -> None:
    if etype.endswith("file_captured") and payload.get("key"):
        out.captured_files.setdefault(payload["key"], payload)
        out.verification_event_ids.setdefault("file:" + payload["key"], event_id)
    elif etype.endswith("directory_listed") and payload.get("key"):
        out.directory_listings.setdefault(payload["key"], payload)
        out.verification_event_ids.setdefault("file:" + payload["key"], event_id)
    elif etype.endswith("code_executed") and payload.get("validator_key"):
        out.code_executions.setdefault(payload["validator_key"], payload)
        out.verification_event_ids.setdefault("code:" + payload["validator_key"], event_id)


def _merge_explicit(out: Extracted, evidence: CaseEvidence) -> None:
    if evidence.final_output is not None:
        out.final_output = evidence.final_output
    if out.completed is None:
        out.completed = evidence.status == "completed"
    elif evidence.status in ("failed", "cancelled"):
        out.completed = False
    if not out.total_tokens:
        usage = evidence.usage or {}
        out.input_tokens = out.input_tokens or _int(usage.get("input_tokens"))
        out.output_tokens = out.output_tokens or _int(usage.get("output_tokens"))
        out.total_tokens = _int(usage.get("total_tokens"))
    if not out.total_tokens and out.models:
        out.input_tokens = out.input_tokens or sum(m.input_tokens for m in out.models.values())
        out.output_tokens = out.output_tokens or sum(m.output_tokens for m in out.models.values())
        out.total_tokens = sum(m.total_tokens for m in out.models.values())
    if not out.total_tokens:
        out.total_tokens = out.input_tokens + out.output_tokens
    if evidence.tool_call_count is not None:
        out.tool_call_count = evidence.tool_call_count
    elif not out.tool_call_count:
        out.tool_call_count = len(out.tool_trace)
    for key, value in evidence.captured_files.items():
        out.captured_files[key] = value
    for key, entries in evidence.directory_listings.items():
        if isinstance(entries, dict):
            out.directory_listings[key] = entries
        else:
            # A bare entry list: keep the root recorded by the listing event when there is one.
            root = (out.directory_listings.get(key) or {}).get("path")
            out.directory_listings[key] = {"key": key, "path": root, "entries": entries}
    for key, value in evidence.code_executions.items():
        out.code_executions[key] = value

"""The replay as an investigation tool (presentation only): when each step happened and how long
it took, what each model call cost and what the model received, and two lanes side by side.

Events in words stay in ``runs.presenters`` (``replay_step``); this module adds time, tokens and
the model's input to those steps, and lines two cases up by step for the side-by-side view.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
from collections.abc import Callable, Iterable

from core.textdiff import Piece, word_diff
from engine import events as ev
from engine.types import JSON, JSONObject
from runs.models import RunEvent
from runs.presenters import ReplayStep, replay_step

# provider key, model id, input tokens, output tokens → cost in USD (None: nobody prices it)
Pricer = Callable[[str, str, int, int], float | None]

ROLE_LABELS = {"system": "System", "user": "User", "assistant": "Assistant", "tool": "Tool result"}


def duration_text(ms: float | None) -> str:
    if ms is None:
        return ""
    if ms < 1000:
        return f"{ms:.0f} ms"
    seconds = ms / 1000
    if seconds < 60:
        return f"{seconds:.2f} s"
    return f"{int(seconds // 60)}m {int(seconds % 60):02d}s"


def cost_text(cost: float | None) -> str:
    if cost is None:
        return "not priced"
    if cost == 0:
        return "$0 (free)"
    return f"${cost:.6f}" if cost < 0.01 else f"${cost:.4f}"


def _ms(later: dt.datetime, earlier: dt.datetime) -> float:
    return max(0.0, (later - earlier).total_seconds() * 1000)


def _payload(event: RunEvent) -> JSONObject:
    return event.payload if isinstance(event.payload, dict) else {}


@dataclasses.dataclass
class InputMessage:
    role: str
    content: str
    tool_calls: list[JSONObject]
    tool_call_id: str = ""
    is_error: bool = False

    @property
    def role_label(self) -> str:
        return ROLE_LABELS.get(self.role, self.role.capitalize())


def input_messages(payload: JSONObject) -> list[InputMessage] | None:
    """The messages a ``model.call.started`` recorded (None: recorded before inputs were stored)."""
    raw = payload.get("messages")
    if not isinstance(raw, list):
        return None
    found = []
    for entry in raw:
        if not isinstance(entry, dict):
            continue
        listed = entry.get("tool_calls")
        calls = [c for c in listed if isinstance(c, dict)] if isinstance(listed, list) else []
        found.append(
            InputMessage(
                role=str(entry.get("role") or ""),
                content=str(entry.get("content") or ""),
                tool_calls=calls,
                tool_call_id=str(entry.get("tool_call_id") or ""),
                is_error=bool(entry.get("is_error")),
            )
        )
    return found


def conversation(inputs: Iterable[RunEvent]) -> list[InputMessage]:
    """The full input of the last of ``inputs`` (one attempt's model calls, in order): each call
    recorded only the messages added since the previous one, from position ``messages_from``."""
    messages: list[InputMessage] = []
    for event in inputs:
        payload = _payload(event)
        new = input_messages(payload) or []
        start = payload.get("messages_from")
        start = start if isinstance(start, int) and 0 <= start <= len(messages) else len(messages)
        messages = messages[:start] + new
    return messages


@dataclasses.dataclass
class _Open:
    """Start times of what is still running while the events are read in order."""

    model: dict[int, dt.datetime] = dataclasses.field(default_factory=dict)  # by attempt
    tools: dict[str, dt.datetime] = dataclasses.field(default_factory=dict)  # by attempt:tool call id
    steps: dict[str, dt.datetime] = dataclasses.field(default_factory=dict)  # by attempt:step index
    runs: dict[int, dt.datetime] = dataclasses.field(default_factory=dict)  # by attempt

    def see(self, event: RunEvent) -> float | None:
        """Record a start; for an end, return how long since its start (ms)."""
        payload, kind, at, attempt = _payload(event), event.event_type, event.occurred_at, event.attempt
        tool_key = f"{attempt}:{payload.get('tool_call_id')}"
        step_key = f"{attempt}:{payload.get('step_index')}"
        if kind == ev.SYSTEM_RUN_STARTED:
            self.runs[attempt] = at
        elif kind == ev.MODEL_CALL_STARTED:
            self.model[attempt] = at
        elif kind == ev.TOOL_CALL_STARTED:
            self.tools[tool_key] = at
        elif kind == ev.SYSTEM_STEP_STARTED:
            self.steps[step_key] = at
        elif kind == ev.MODEL_CALL_COMPLETED and attempt in self.model:
            return _ms(at, self.model.pop(attempt))
        elif kind in ev.TOOL_CALL_RESULTS and tool_key in self.tools:
            return _ms(at, self.tools.pop(tool_key))
        elif kind == ev.SYSTEM_STEP_COMPLETED and step_key in self.steps:
            return _ms(at, self.steps.pop(step_key))
        elif kind in (ev.SYSTEM_RUN_COMPLETED, ev.SYSTEM_RUN_FAILED) and attempt in self.runs:
            return _ms(at, self.runs[attempt])
        return None


def _usage(payload: JSONObject) -> tuple[int, int]:
    usage = payload.get("usage")
    if not isinstance(usage, dict):
        usage = {}
    try:
        return _int(usage.get("input_tokens") or 0), _int(usage.get("output_tokens") or 0)
    except (TypeError, ValueError):
        return 0, 0


def _int(value: JSON) -> int:
    if isinstance(value, str | int | float):
        return int(value)
    raise TypeError(f"not a number: {type(value).__name__}")


def _model_call(step: ReplayStep, payload: JSONObject, pricer: Pricer | None) -> None:
    step.tokens_in, step.tokens_out = _usage(payload)
    if pricer is not None:
        model = str(payload.get("provider_model_id") or "")
        step.cost = pricer(str(payload.get("provider_key") or ""), model, step.tokens_in, step.tokens_out)
        step.cost_text = cost_text(step.cost)


def _model_input(step: ReplayStep, payload: JSONObject) -> None:
    messages = input_messages(payload)
    total = payload.get("message_count")
    if messages is None:
        step.title = f"Model input ({total} messages, not recorded)" if total is not None else "Model call started"
        return
    step.messages = messages
    step.minor = False
    start = payload.get("messages_from") or 0
    step.messages_total = int(total) if isinstance(total, int) else len(messages) + _int(start)
    step.messages_earlier = step.messages_total - len(messages)
    new = len(messages)
    step.title = f"Model input: {new} message{'s' if new != 1 else ''}" + (
        f" (+{step.messages_earlier} earlier)" if step.messages_earlier else ""
    )


def replay_steps(
    events: list[RunEvent], *, before: Iterable[RunEvent] = (), origin: dt.datetime | None = None, pricer: Pricer | None = None
) -> list[ReplayStep]:
    """The replay's steps with time since the case started, durations, tokens, cost and input.

    ``before``: the events just before ``events`` (the previous page), where calls that end on
    this page started.
    """
    open_ = _Open()
    for event in before:
        open_.see(event)
    if origin is None and events:
        origin = events[0].occurred_at
    steps = []
    for event in events:
        step = replay_step(event)
        took = open_.see(event)
        step.duration = duration_text(took)
        if origin is not None:
            step.at = f"+{duration_text(_ms(event.occurred_at, origin))}" if event.occurred_at >= origin else ""
        payload = _payload(event)
        if event.event_type == ev.MODEL_CALL_COMPLETED:
            _model_call(step, payload, pricer)
        elif event.event_type == ev.MODEL_CALL_STARTED:
            _model_input(step, payload)
        steps.append(step)
    return steps


# -- two lanes side by side ----------------------------------------------------------------------


@dataclasses.dataclass
class SideItem:
    kind: str  # model | tool | final | failed
    title: str
    text: str = ""
    detail: str = ""
    is_error: bool = False
    # What differs from the other lane's item in the same place (set by side_by_side)
    text_marks: list[Piece] | None = None
    detail_marks: list[Piece] | None = None


SIDE_SHOWN_CHARS = 2000  # per field of a side-by-side item


def _mark_differences(left: list[SideItem], right: list[SideItem]) -> None:
    """The two lanes' items in the same place and of the same kind, their differing words marked."""
    for a, b in zip(left, right, strict=False):
        if a.kind != b.kind:
            continue
        for field in ("text", "detail"):
            one, two = getattr(a, field)[:SIDE_SHOWN_CHARS], getattr(b, field)[:SIDE_SHOWN_CHARS]
            if one and two and one != two:
                marks = word_diff(one, two)
                setattr(a, f"{field}_marks", marks.left)
                setattr(b, f"{field}_marks", marks.right)


@dataclasses.dataclass
class SideRow:
    label: str
    left: list[SideItem]
    right: list[SideItem]


_SHOWN = frozenset({ev.MODEL_CALL_COMPLETED, *ev.TOOL_CALL_RESULTS, ev.SYSTEM_RUN_COMPLETED, ev.SYSTEM_RUN_FAILED})


def _side_item(step: ReplayStep) -> SideItem:
    if step.kind == ev.MODEL_CALL_COMPLETED:
        calls = ", ".join(str(c.get("name")) for c in step.calls)
        return SideItem("model", "Model" + (f" → {calls}" if calls else ""), text=step.text)
    if step.is_tool:
        return SideItem("tool", step.title, text=step.text, detail=step.error, is_error=step.is_error)
    if step.final:
        return SideItem("final", "Final output", text=step.text)
    return SideItem("failed", step.title, detail=step.error, is_error=True)


def _by_step(events: list[RunEvent], live: bool) -> dict[int, list[SideItem]]:
    """The shown events of the case's last attempt, grouped by step (result: -1)."""
    last_attempt = max((e.attempt for e in events), default=0)
    grouped: dict[int, list[SideItem]] = {}
    running: dict[str, tuple[int, SideItem]] = {}  # tool calls started and not answered yet
    step = 0
    for event in events:
        if event.attempt != last_attempt:
            continue
        payload = _payload(event)
        if event.event_type == ev.SYSTEM_STEP_STARTED:
            index = payload.get("step_index")
            step = index if isinstance(index, int) else step + 1
        elif event.event_type == ev.TOOL_CALL_STARTED:
            state = "running…" if live else "no result"
            item = SideItem("tool", f"Tool {payload.get('tool_name') or ''} ({state})", text=json.dumps(payload.get("arguments"), indent=2))
            running[str(payload.get("tool_call_id"))] = (step, item)
        elif event.event_type in ev.TOOL_CALL_RESULTS:
            running.pop(str(payload.get("tool_call_id")), None)
        if event.event_type not in _SHOWN:
            continue
        where = -1 if event.event_type in (ev.SYSTEM_RUN_COMPLETED, ev.SYSTEM_RUN_FAILED) else step
        grouped.setdefault(where, []).append(_side_item(replay_step(event)))
    for where, item in running.values():
        grouped.setdefault(where, []).append(item)
    return grouped


def side_by_side(left: list[RunEvent], right: list[RunEvent], *, live: tuple[bool, bool] = (False, False)) -> list[SideRow]:
    """Two cases' steps aligned by step number, then their results (each case's last attempt).

    ``live``: whether each case is still running (a tool call without a result is in progress)."""
    a, b = _by_step(left, live[0]), _by_step(right, live[1])
    rows = []
    for index in sorted((set(a) | set(b)) - {-1}):
        rows.append(SideRow(label=f"Step {index}" if index else "Before the first step", left=a.get(index, []), right=b.get(index, [])))
    if -1 in a or -1 in b:
        rows.append(SideRow(label="Result", left=a.get(-1, []), right=b.get(-1, [])))
    for row in rows:
        _mark_differences(row.left, row.right)
    return rows

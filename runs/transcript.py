"""A case as a conversation: who said what, in order (the replay's default view).

The event view shows every record; a person reading why a case failed wants the conversation:
the prompt, each answer of the model with the tools it asked for, each tool's result, and how the
case ended. Built from the events of the case's last attempt (an earlier attempt was retried and
its words are in the event view).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable

from engine import events as ev
from engine.scoring.security import describe
from engine.types import JSON, JSONObject
from runs.models import RunEvent
from runs.presenters import SHOWN_CHARS

# A transcript reads at most this many events, and shows at most this many characters (issue 23:
# a page of huge payloads took seconds); the event view pages through the rest.
EVENT_LIMIT = 2000
CHARACTER_BUDGET = 1_000_000

ROLE_LABELS = {
    "system": "System prompt",
    "user": "User",
    "assistant": "Agent",
    "tool": "Tool result",
    "final": "Final answer",
    "failed": "The case failed",
    "probe": "Adversarial prompt",
    "finding": "Security finding",
    "reasoning": "Model reasoning (summary)",
}


@dataclasses.dataclass
class Turn:
    role: str  # system | user | assistant | tool | final | failed | probe | finding | reasoning
    text: str
    event_id: str
    event_pk: int
    name: str = ""  # the tool's name (tool) or the probe's (probe)
    calls: list[tuple[str, str]] = dataclasses.field(default_factory=list)  # (tool name, arguments)
    is_error: bool = False
    clipped: int = 0  # the text's length when it was cut to SHOWN_CHARS

    @property
    def label(self) -> str:
        return ROLE_LABELS.get(self.role, self.role.capitalize())


def _payload(event: RunEvent) -> JSONObject:
    return event.payload if isinstance(event.payload, dict) else {}


def _arguments(value: JSON) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)


def _turn(role: str, text: str, event: RunEvent, **extra: object) -> Turn:
    turn = Turn(role=role, text=text, event_id=str(event.event_id), event_pk=event.pk, **extra)  # type: ignore[arg-type]
    if len(text) > SHOWN_CHARS:
        turn.clipped, turn.text = len(text), text[:SHOWN_CHARS]
    return turn


def _prompt_turns(event: RunEvent, seen: int) -> tuple[list[Turn], int]:
    """The system and user messages a model call received for the first time (the agent's own
    answers and the tool results come from their own events), and how many messages the
    conversation has now. Each call records the messages from position ``messages_from`` on."""
    payload = _payload(event)
    entries = payload.get("messages")
    entries = entries if isinstance(entries, list) else []
    start = payload.get("messages_from")
    start = start if isinstance(start, int) and start >= 0 else seen
    turns = []
    for position, entry in enumerate(entries, start):
        if position >= seen and isinstance(entry, dict) and entry.get("role") in ("system", "user"):
            turns.append(_turn(str(entry["role"]), str(entry.get("content") or ""), event))
    return turns, max(seen, start + len(entries))


def _final_turn(turns: list[Turn], event: RunEvent, output: str) -> None:
    """The final answer; when it repeats the agent's last words, those words become it."""
    last = turns[-1] if turns else None
    if last is not None and last.role == "assistant" and not last.calls and last.text.strip() == output.strip():
        last.role = "final"
        return
    turns.append(_turn("final", output, event))


def _result_turn(event: RunEvent, payload: JSONObject) -> Turn:
    result = payload.get("result")
    result = result if isinstance(result, dict) else {}
    failed = event.event_type == ev.TOOL_CALL_FAILED or bool(result.get("is_error"))
    return _turn("tool", str(result.get("content") or ""), event, name=str(payload.get("tool_name") or ""), is_error=failed)


def _answer_turn(event: RunEvent, payload: JSONObject) -> Turn:
    listed = payload.get("tool_calls")
    calls = (
        [(str(c.get("name") or ""), _arguments(c.get("arguments"))) for c in listed if isinstance(c, dict)]
        if isinstance(listed, list)
        else []
    )
    return _turn("assistant", str(payload.get("output_text") or ""), event, calls=calls)


def within_budget(turns: list[Turn]) -> tuple[list[Turn], bool]:
    """The first turns whose text fits ``CHARACTER_BUDGET``, and whether some were left out."""
    used = 0
    for index, turn in enumerate(turns):
        used += len(turn.text) + sum(len(arguments) for _, arguments in turn.calls)
        if used > CHARACTER_BUDGET:
            return turns[:index], True
    return turns, False


def transcript(events: Iterable[RunEvent]) -> list[Turn]:
    """The conversation of the last attempt among ``events`` (payloads hydrated, in order)."""
    rows = list(events)
    last_attempt = max((e.attempt for e in rows), default=0)
    turns: list[Turn] = []
    seen = 0
    for event in rows:
        if event.attempt != last_attempt:
            continue
        payload, kind = _payload(event), event.event_type
        if kind == ev.MODEL_CALL_STARTED:
            prompts, seen = _prompt_turns(event, seen)
            turns.extend(prompts)
        elif kind == ev.MODEL_CALL_COMPLETED:
            turns.append(_answer_turn(event, payload))
        elif kind in ev.TOOL_CALL_RESULTS:
            turns.append(_result_turn(event, payload))
        elif kind == ev.SECURITY_PROBE_SENT:
            turns.append(_turn("probe", str(payload.get("message") or ""), event, name=str(payload.get("probe_name") or "")))
        elif kind == ev.MODEL_REASONING:  # docs/responses-mode.md: the summary only
            turns.append(_turn("reasoning", str(payload.get("summary_text") or "(no summary returned)"), event))
        elif kind == ev.SECURITY_FINDING:  # names the secret or rule, never its value
            turns.append(_turn("finding", describe(payload), event, is_error=True))
        elif kind == ev.SYSTEM_RUN_COMPLETED:
            _final_turn(turns, event, str(payload.get("final_output") or ""))
        elif kind == ev.SYSTEM_RUN_FAILED:
            reason = str(payload.get("stop_reason") or "")
            turns.append(_turn("failed", str(payload.get("error") or reason), event, name=reason, is_error=True))
    return turns

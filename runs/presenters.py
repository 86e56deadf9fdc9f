"""Run events in words, for the pages: a lane's current activity, the live ticker, the case replay.

The one place that turns a stored event into what a person reads. Event types are the constants
of ``engine.events`` (the engine emits them); nothing here types one out again.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, TypedDict

from engine import events as ev
from engine.scoring.security import describe
from engine.types import EVENT_SCHEMA_VERSION, JSON, JSONObject
from runs.models import CaseRun, RunEvent

if TYPE_CHECKING:
    from runs.selectors import LaneProgress

_SHELL_TOOLS = frozenset({"exec", "run_tests", "build"})
_FAILURES = frozenset({ev.SYSTEM_RUN_FAILED, ev.TOOL_CALL_FAILED, ev.SCORING_FAILED, ev.SANDBOX_COMMAND_FAILED, ev.SECURITY_FINDING})

# Bookkeeping events: shown as one muted line in the replay, expandable to their JSON.
_MINOR_TITLES = {
    ev.SYSTEM_RUN_STARTED: "Run started",
    ev.MODEL_CALL_STARTED: "Model call started",
    ev.MODEL_OUTPUT_DELTA: "Model output (streamed)",
    ev.SCORING_STARTED: "Scoring started",
    ev.SCORING_COMPLETED: "Scored",
}


def _payload(event: RunEvent) -> JSONObject:
    return event.payload if isinstance(event.payload, dict) else {}


def _dicts(value: JSON) -> list[JSONObject]:
    """The objects of a JSON list (a payload's ``tool_calls``); none when it is not a list."""
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []


def _is_tool_call(kind: str) -> bool:
    return kind.startswith(ev.TOOL_CALL_FAMILY)


# -- a lane's activity and the live ticker ---------------------------------------------------


def lane_activity(event: RunEvent | None) -> str:
    """What a lane is doing, in words, from its latest event."""
    if event is None:
        return "waiting"
    payload = _payload(event)
    kind = event.event_type
    if kind == ev.MODEL_CALL_STARTED:
        return f"calling {payload.get('model') or 'the model'}"
    if kind == ev.PROVIDER_THROTTLE_WAITING:
        return f"waiting on provider limit ({_limit_words(payload)})"
    if kind == ev.PROVIDER_CALL_RETRYING:
        return f"provider {payload.get('code') or 'error'}: retrying in {_seconds(payload.get('delay_ms'))}"
    if _is_tool_call(kind):
        name = payload.get("tool_name") or "tool"
        if name in _SHELL_TOOLS:
            args = payload.get("arguments")
            if not isinstance(args, dict):
                args = {}
            command = args.get("command") or args.get("argv") or name
            return f"$ {' '.join(str(part) for part in command) if isinstance(command, list) else command}"[:80]
        return f"tool {name}"
    if kind.startswith(ev.GRADER_FAMILY):
        return "verifying"
    if kind.startswith(ev.SCORING_FAMILY):
        return "scoring"
    if kind == ev.SYSTEM_RUN_COMPLETED:
        return "case finished"
    if kind == ev.SYSTEM_RUN_FAILED:
        return "case failed"
    return kind


_LIMIT_WORDS = {"max_concurrent_calls": "concurrent calls", "requests_per_minute": "requests/min", "tokens_per_minute": "tokens/min"}


def _limit_words(payload: dict[str, JSON]) -> str:
    limit = str(payload.get("limit") or "")
    return f"{payload.get('limit_value') or '?'} {_LIMIT_WORDS.get(limit, limit or 'limit')}"


def _seconds(milliseconds: JSON) -> str:
    return f"{float(milliseconds) / 1000:.1f} s" if isinstance(milliseconds, (int, float)) else "a moment"


def event_summary(event: RunEvent) -> str:
    """One line about an event, for the live ticker."""
    payload = _payload(event)
    kind = event.event_type
    if kind == ev.MODEL_CALL_COMPLETED:
        calls = ", ".join(str(c.get("name", "?")) for c in _dicts(payload.get("tool_calls")))
        return f"model answered{' → ' + calls if calls else ''}"
    if _is_tool_call(kind):
        return f"{payload.get('tool_name', 'tool')} {'failed' if kind == ev.TOOL_CALL_FAILED else 'ok'}"
    if kind == ev.SYSTEM_RUN_FAILED:
        return f"failed: {payload.get('stop_reason', '')} {payload.get('error') or ''}".strip()
    if kind == ev.SYSTEM_RUN_COMPLETED:
        return f"completed in {payload.get('step_count', '?')} steps"
    if kind == ev.SECURITY_FINDING:
        return f"security finding: {describe(payload)}"
    if kind == ev.PROVIDER_THROTTLED:
        verb = "waited" if payload.get("acquired") else "gave up after"
        return f"{verb} {_seconds(payload.get('waited_ms'))} on provider limit ({_limit_words(payload)})"
    if kind == ev.SECURITY_PROBE_SENT:
        return f"adversarial prompt {payload.get('probe_name') or ''}"
    return lane_activity(event)


@dataclasses.dataclass(frozen=True)
class TickerLine:
    event: RunEvent
    summary: str
    failed: bool

    @property
    def label(self) -> str:
        return event_label(self.event.event_type)


def event_label(kind: str) -> str:
    """An event type in words (``model.call.completed`` → "model call completed"); the type
    itself stays in the element's title for whoever searches the event log."""
    return kind.replace(".", " ").replace("_", " ")


def ticker_lines(events: Iterable[RunEvent]) -> list[TickerLine]:
    return [TickerLine(event=e, summary=event_summary(e), failed=e.event_type in _FAILURES) for e in events]


# -- the case replay -------------------------------------------------------------------------


@dataclasses.dataclass
class ReplayStep:
    event: RunEvent
    kind: str
    title: str
    raw: str
    text: str = ""
    error: str = ""
    calls: list[dict[str, JSON]] = dataclasses.field(default_factory=list)
    is_error: bool = False
    is_tool: bool = False
    minor: bool = False
    final: bool = False  # the case's final output
    clipped: int = 0  # the longest field's length when a field was cut to SHOWN_CHARS (the full payload is a link)
    # Filled by runs.timeline: time since the case started, how long the call or step took,
    # tokens and cost of a model call, and the messages a model call received.
    at: str = ""
    duration: str = ""
    tokens_in: int = 0
    tokens_out: int = 0
    cost: float | None = None
    cost_text: str = ""
    messages: list[Any] = dataclasses.field(default_factory=list)
    messages_total: int = 0
    messages_earlier: int = 0

    @property
    def expanded(self) -> bool:
        """Open by default: what the agent said and did, and anything that went wrong."""
        return self.is_error or self.is_tool or self.final or self.kind == ev.MODEL_CALL_COMPLETED


def _pretty(text: str) -> str:
    """Indent a JSON document (tool results usually are one); anything else unchanged."""
    stripped = text.strip()
    if stripped[:1] in ("{", "["):
        try:
            return json.dumps(json.loads(stripped), indent=2, ensure_ascii=False)
        except ValueError:
            pass
    return text


# What one field of a replay step shows; the rest is one link away (issue 23: 100 events of 250 kB
# made a 12.3 MB page that took 6.2 s). Measured in characters of the rendered text.
SHOWN_CHARS = 16_384


def _clip(step: ReplayStep) -> ReplayStep:
    longest = max(len(step.raw), len(step.text), len(step.error))
    if longest <= SHOWN_CHARS:
        return step
    step.clipped = longest
    step.raw, step.text, step.error = step.raw[:SHOWN_CHARS], step.text[:SHOWN_CHARS], step.error[:SHOWN_CHARS]
    step.calls = [{**c, "arguments": str(c.get("arguments"))[:SHOWN_CHARS]} for c in step.calls]
    return step


def replay_step(event: RunEvent) -> ReplayStep:
    """One event of the replay timeline (its payload already hydrated); long fields are cut to
    ``SHOWN_CHARS`` (``clipped`` says so, the page links to the full payload)."""
    return _clip(_replay_step(event))


def _replay_step(event: RunEvent) -> ReplayStep:
    payload = _payload(event)
    kind = event.event_type
    step = ReplayStep(
        event=event,
        kind=kind,
        title=_MINOR_TITLES.get(kind, kind),
        raw=json.dumps(payload, indent=2, sort_keys=True, default=str),
        is_tool=_is_tool_call(kind),
        minor=kind in _MINOR_TITLES
        or kind == ev.TOOL_CALL_STARTED
        or kind.startswith((ev.SYSTEM_STEP_FAMILY, ev.GRADER_FAMILY, ev.SCORING_FAMILY)),
    )
    if kind == ev.MODEL_CALL_COMPLETED:
        step.title = f"Model call ({payload.get('provider_model_id') or ''})"
        step.text = str(payload.get("output_text") or "")
        step.calls = [{"name": c.get("name"), "arguments": c.get("arguments")} for c in _dicts(payload.get("tool_calls"))]
    elif kind in ev.TOOL_CALL_RESULTS:
        result = payload.get("result")
        if not isinstance(result, dict):
            result = {}
        step.title = f"Tool {payload.get('tool_name', '')}"
        step.is_error = kind == ev.TOOL_CALL_FAILED or bool(result.get("is_error"))
        step.text = json.dumps(payload.get("arguments"), indent=2, default=str)
        step.error = _pretty(str(result.get("content", "")))
    elif kind == ev.TOOL_CALL_STARTED:  # its result follows with the arguments; this line marks when the call began
        step.title, step.is_tool = f"Calling {payload.get('tool_name') or 'a tool'}", False
    elif kind == ev.SCORING_METRIC_RECORDED:
        value = payload.get("value")
        step.title = f"Metric {payload.get('metric_key') or ''}: {value if value is not None else payload.get('state') or '—'}"
    elif kind == ev.SYSTEM_RUN_COMPLETED:
        step.title, step.text, step.final = "Final output", str(payload.get("final_output") or ""), True
    elif kind == ev.SYSTEM_RUN_FAILED:
        step.title, step.error, step.is_error = f"Failed: {payload.get('stop_reason', '')}", str(payload.get("error") or ""), True
    elif kind.startswith(ev.GRADER_FAMILY):
        step.title = kind.rsplit(".", 1)[-1].replace("_", " ").capitalize() + " (for grading)"
    elif kind.startswith(ev.SYSTEM_STEP_FAMILY):
        step.title = f"Step {payload.get('step_index', '')} {'started' if kind == ev.SYSTEM_STEP_STARTED else 'completed'}"
    elif kind == ev.MODEL_REASONING:  # docs/responses-mode.md: the summary only
        step.title, step.text = "Model reasoning (summary)", str(payload.get("summary_text") or "(no summary returned)")
    elif kind == ev.RACE_STANDINGS_INJECTED:  # docs/runs.md, "Race context"
        step.title, step.text = "Peer standings told to the agent", str(payload.get("standings_snapshot") or "")
    elif kind.startswith(ev.SECURITY_FAMILY):
        _security_step(step, payload)
    return step


def _security_step(step: ReplayStep, payload: dict[str, JSON]) -> None:
    """Security packs (docs/security-evaluation.md): adversarial prompts, answers and findings."""
    name = payload.get("probe_name") or ""
    if step.kind == ev.SECURITY_PROBE_SENT:
        step.title, step.text = (
            f"Adversarial prompt {name!r} ({payload.get('strategy') or 'no strategy'})",
            str(payload.get("message") or ""),
        )
    elif step.kind == ev.SECURITY_PROBE_ANSWERED:
        answered = payload.get("answered")
        step.title = f"Answer to {name!r}" if answered else f"No answer to {name!r} ({payload.get('stop_reason') or ''})"
        step.text = str(payload.get("answer") or "")
    elif step.kind == ev.SECURITY_FINDING:
        step.title, step.error, step.is_error = "Security finding", describe(payload), True


class EventJSON(TypedDict):
    """An event as the API and the JSONL export show it (``EventOutputSerializer`` documents it)."""

    id: int
    event_id: str
    schema_version: JSON  # the payload's, else the current one
    run_id: int
    run_agent_id: int
    case_run_id: int | None
    case_key: str
    attempt: int
    sequence_number: int
    event_type: str
    source: str
    occurred_at: str
    payload: JSON


def event_json(event: RunEvent) -> EventJSON:
    """An event as the API and the JSONL export show it (one shape; ``EventOutputSerializer`` documents it)."""
    payload: JSON = event.payload
    occurred = event.occurred_at.isoformat()
    return {
        "id": event.pk,
        "event_id": event.event_id,
        "schema_version": payload.get("schema_version", EVENT_SCHEMA_VERSION) if isinstance(payload, dict) else EVENT_SCHEMA_VERSION,
        "run_id": event.run_id,
        "run_agent_id": event.lane_id,
        "case_run_id": event.case_run_id,
        "case_key": event.case_key,
        "attempt": event.attempt,
        "sequence_number": event.sequence_number,
        "event_type": event.event_type,
        "source": event.source,
        "occurred_at": occurred[:-6] + "Z" if occurred.endswith("+00:00") else occurred,
        "payload": payload,
    }


def lanes_with_activity(lanes: list[LaneProgress]) -> list[LaneProgress]:
    """``lanes`` with what each is doing in words: its latest event while it runs, else its status."""
    for progress in lanes:
        lane = progress.lane
        progress.activity = lane.get_status_display().lower() if lane.is_terminal else lane_activity(progress.latest_event)
    return lanes


@dataclasses.dataclass(frozen=True)
class TrialsSummary:
    """The run page's words for repeated trials (docs/runs.md, "Trials"); None for a one-trial run."""

    text: str  # "30 case runs (10 cases × 3 trials)"
    adaptive: bool
    rounds: int = 1
    max_repeats: int | None = None
    fixed_case_runs: int = 0  # what max_repeats trials of every case in every lane would have cost
    saved: int = 0  # fixed_case_runs minus the case runs scheduled
    stop_reason: str = ""  # decided | budget_spent | settled | "" (still going)
    lane_trials: list[tuple[str, int]] = dataclasses.field(default_factory=list)


STOP_WORDS = {"decided": "every comparison decided", "budget_spent": "max_repeats reached", "settled": "every case's outcome settled"}


def trials_summary(run: Any, lanes: list[LaneProgress]) -> TrialsSummary | None:
    """How many case runs the run has, as cases × trials, and for an adaptive run its rounds and trials saved."""
    if not lanes or (run.repeats == 1 and not run.is_adaptive):
        return None
    first = lanes[0]
    cases = first.total // max(1, first.lane.trials)
    if run.is_adaptive:
        # Per-case top-up: a lane's cases may have different numbers of trials; count trial 1 of each.
        cases = CaseRun.objects.filter(lane_id=first.lane.pk, trial=1).count()
    total = sum(lane.total for lane in lanes)
    per_lane = [(lane.lane.label, lane.lane.trials) for lane in lanes]
    counts = {trials for _, trials in per_lane}
    case_word = f"{cases} case{'s' if cases != 1 else ''}"
    if len(counts) == 1:
        trials = counts.pop()
        shape = f"{case_word} × {trials} trial{'s' if trials != 1 else ''}"
    else:
        shape = f"{case_word}; trials per case: " + ", ".join(f"{label} {trials}" for label, trials in per_lane)
    if len(lanes) > 1:
        shape += f" × {len(lanes)} lanes" if len(counts) <= 1 else ""
    text = f"{total} case runs ({shape})"
    if not run.is_adaptive:
        return TrialsSummary(text=text, adaptive=False, lane_trials=per_lane)
    log = run.round_log if isinstance(run.round_log, list) else []
    last = log[-1] if log and isinstance(log[-1], dict) else {}
    stop = str(last.get("reason") or "") if last.get("stop") else ""
    fixed = (run.max_repeats or 0) * cases * len(lanes)
    return TrialsSummary(
        text=text,
        adaptive=True,
        rounds=run.rounds,
        max_repeats=run.max_repeats,
        fixed_case_runs=fixed,
        saved=max(0, fixed - total),
        stop_reason=stop,
        lane_trials=per_lane,
    )

"""``multi_turn`` mode (spec runtime.md §3.5) with scripted user-simulator phases.

One message history for the whole conversation. Each scripted user turn appends a user message
and re-enters the agent loop until ``submit``; the submitted answer is the turn's assistant
text and the submit tool message stays in the history. Step and tool-call counters (and their
limits) are cumulative over the conversation.

Phases run in order. The first always runs; a later phase runs if its trigger is ``always``,
or ``on_assistant_mismatch`` and some turn's ``expects`` failed since the last such phase ran.
Other triggers never fire in the engine. More scripted turns than ``max_turns`` (default 50)
→ ``max_turns``. Cases with ``llm``/``human`` phases fail with ``simulator_error`` before any
model call (not supported yet).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

from engine.events import SOURCE_MULTI_TURN
from engine.loop import LoopResult, build_loop, finish, make_emitter
from engine.modes import case as c
from engine.modes.context import render, template_context
from engine.modes.simulator import (
    check_expects,
    max_turns_of,
    phase_should_run,
    phases_of,
    unsupported_simulator_actors,
)
from engine.types import JSON, CancelCheck, EventSink, Message, Provider, Usage


def run_multi_turn(
    request: c.CaseRequest,
    *,
    provider: Provider,
    toolset: Any,
    event_sink: EventSink,
    cancel_check: CancelCheck,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> c.CaseOutcome:
    started_at = clock()
    emitter = make_emitter(request, event_sink, SOURCE_MULTI_TURN)
    transcript: list[dict[str, JSON]] = []

    def simulator_failure(message: str) -> c.CaseOutcome:
        return finish(
            emitter,
            LoopResult(c.STOP_SIMULATOR_ERROR, error=message),
            step_count=0,
            tool_call_count=0,
            usage=Usage(),
            duration_ms=int((clock() - started_at) * 1000),
        )

    unsupported = unsupported_simulator_actors(request.case)
    if unsupported:
        return simulator_failure(f"user simulator actor(s) {', '.join(unsupported)} not supported yet")
    phases = phases_of(request.case)
    if not phases:
        return simulator_failure("user_simulator has no phases")

    loop = build_loop(
        request,
        provider=provider,
        toolset=toolset,
        emitter=emitter,
        cancel_check=cancel_check,
        clock=clock,
        sleep=sleep,
        started_at=started_at,
        keep_submit_message=True,
    )
    context = template_context(request.case)
    max_turns = max_turns_of(request.case)
    pending_mismatch = False
    result = LoopResult(c.STOP_COMPLETED, final_output="")

    def conversation_turns() -> Iterator[tuple[dict[str, JSON], dict[str, JSON]]]:
        nonlocal pending_mismatch
        for index, phase in enumerate(phases):
            if not phase_should_run(phase, index, pending_mismatch=pending_mismatch):
                continue
            if index > 0:
                pending_mismatch = False
            for turn in phase.get("turns") or []:
                yield phase, turn if isinstance(turn, dict) else {}

    for phase, turn in conversation_turns():
        turn_index = len(transcript) + 1
        phase_id = str(phase.get("id") or "")
        if turn_index > max_turns:
            result = LoopResult(c.STOP_MAX_TURNS, error=f"conversation exceeded max_turns of {max_turns}")
            break
        message, _ = render(str(turn.get("message") or ""), context)
        if not message.strip():
            result = LoopResult(c.STOP_SIMULATOR_ERROR, error=f"phase {phase_id!r} has a turn without a message")
            break
        emitter.emit("turn.user.message", {"turn_index": turn_index, "phase_id": phase_id, "actor": "scripted", "message": message})
        loop.messages.append(Message(role="user", content=message))
        result = loop.run_until_submit()
        if not result.completed:
            break
        answer = result.final_output or ""
        checks = check_expects(answer, turn.get("expects") or [], context)
        mismatch = any(check["passed"] is False for check in checks)
        pending_mismatch = pending_mismatch or mismatch
        emitter.emit("turn.assistant.message", {"turn_index": turn_index, "phase_id": phase_id, "message": answer})
        emitter.emit(
            "turn.completed",
            {
                "turn_index": turn_index,
                "phase_id": phase_id,
                "actor": "scripted",
                "mismatch": mismatch,
                "expectation_results": checks,
                "step_count": loop.step_count,
                "tool_call_count": loop.tool_call_count,
            },
        )
        transcript.append(
            {
                "turn_index": turn_index,
                "phase_id": phase_id,
                "actor": "scripted",
                "user_message": message,
                "assistant_message": answer,
                "mismatch": mismatch,
                "expectation_results": checks,
            }
        )

    if result.completed and not transcript:
        result = LoopResult(c.STOP_SIMULATOR_ERROR, error="user_simulator produced no scripted turns")
    emitter.emit(
        "conversation.completed",
        {
            "turn_count": len(transcript),
            "stop_reason": result.stop_reason,
            "final_output": result.final_output if result.completed else None,
        },
    )
    return finish(
        emitter,
        result,
        step_count=loop.step_count,
        tool_call_count=loop.tool_call_count,
        usage=loop.usage,
        duration_ms=int((clock() - started_at) * 1000),
        transcript=transcript,
    )

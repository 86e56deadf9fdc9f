"""``multi_turn`` mode (spec runtime.md §3.5): scripted and LLM user-simulator phases.

One message history for the whole conversation. Each user turn appends a user message and
re-enters the agent loop until ``submit``; the submitted answer is the turn's assistant text
and the submit tool message stays in the history. Step and tool-call counters (and their
limits) are cumulative over the conversation.

Phases run in order, each at most once, when :func:`~engine.modes.simulator.phase_should_run`
says so. A ``scripted`` phase plays its turns; more turns than the conversation's
``max_turns`` (default 50) → ``max_turns``. An ``llm`` phase asks the simulator provider (the
deployment chosen at run creation; the phase's ``model`` overrides its model) for the user's
next message, up to the phase's ``max_turns`` (default: the conversation's), until its
``until`` conditions hold; reaching the conversation's limit ends the phase, not the case.
Simulator usage is reported on ``turn.user.simulated`` and is not the agent's usage. A
``human`` phase whose trigger fires fails the case with ``simulator_error`` (the Django side
refuses such runs at creation); one behind ``manual`` and the like never fires.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from engine.events import (
    CONVERSATION_COMPLETED,
    PROVIDER_CALL_RETRYING,
    SOURCE_MULTI_TURN,
    TURN_ASSISTANT_MESSAGE,
    TURN_COMPLETED,
    TURN_USER_MESSAGE,
    TURN_USER_SIMULATED,
    EventEmitter,
)
from engine.loop import AgentLoop, LoopResult, build_loop, finish, make_emitter
from engine.modes import case as c
from engine.modes.adversarial import probes_for, run_probes
from engine.modes.context import render, template_context
from engine.modes.race import StandingsSource
from engine.modes.simulator import (
    LLM,
    SCRIPTED,
    SIMULATOR_PURPOSE,
    ConversationState,
    actor_of,
    check_expects,
    max_turns_of,
    phase_max_turns,
    phase_should_run,
    phases_of,
    simulator_messages,
    unsupported_simulator_actors,
    until_met,
)
from engine.providers.retry import call_with_retries, retry_event_payload
from engine.types import JSON, CancelCheck, EventSink, Message, ModelRequest, Provider, ProviderError, Usage


class _Conversation:
    """The conversation's state while phases run: the loop, the transcript, the trigger state."""

    def __init__(
        self,
        request: c.CaseRequest,
        *,
        loop: AgentLoop,
        emitter: EventEmitter,
        simulator: Provider | None,
        cancel_check: CancelCheck,
        sleep: Callable[[float], None],
    ) -> None:
        self.request = request
        self.loop = loop
        self.emitter = emitter
        self.simulator = simulator
        self.cancel_check = cancel_check
        self.sleep = sleep
        self.context = template_context(request.case)
        self.max_turns = max_turns_of(request.case)
        self.state = ConversationState()
        self.transcript: list[dict[str, JSON]] = []
        self.result = LoopResult(c.STOP_COMPLETED, final_output="")

    # -- one turn -----------------------------------------------------------------------------

    def turn(self, phase_id: str, actor: str, message: str, expects: list[JSON]) -> LoopResult | None:
        """Play one user turn; a LoopResult ends the conversation."""
        turn_index = len(self.transcript) + 1
        self.emitter.emit(TURN_USER_MESSAGE, {"turn_index": turn_index, "phase_id": phase_id, "actor": actor, "message": message})
        self.loop.messages.append(Message(role="user", content=message))
        self.result = self.loop.run_until_submit()
        if not self.result.completed:
            return self.result
        answer = self.result.final_output or ""
        checks = check_expects(answer, expects, self.context)
        mismatch = self.state.record_checks(checks)
        results: list[JSON] = [*checks]
        self.emitter.emit(TURN_ASSISTANT_MESSAGE, {"turn_index": turn_index, "phase_id": phase_id, "message": answer})
        self.emitter.emit(
            TURN_COMPLETED,
            {
                "turn_index": turn_index,
                "phase_id": phase_id,
                "actor": actor,
                "mismatch": mismatch,
                "expectation_results": results,
                "step_count": self.loop.step_count,
                "tool_call_count": self.loop.tool_call_count,
            },
        )
        self.transcript.append(
            {
                "turn_index": turn_index,
                "phase_id": phase_id,
                "actor": actor,
                "user_message": message,
                "assistant_message": answer,
                "mismatch": mismatch,
                "expectation_results": results,
            }
        )
        return None

    # -- phases -------------------------------------------------------------------------------

    def scripted(self, phase: dict[str, JSON], phase_id: str) -> LoopResult | None:
        turns = phase.get("turns")
        for raw in turns if isinstance(turns, list) else []:
            turn = raw if isinstance(raw, dict) else {}
            if len(self.transcript) >= self.max_turns:
                return LoopResult(c.STOP_MAX_TURNS, error=f"conversation exceeded max_turns of {self.max_turns}")
            message, _ = render(str(turn.get("message") or ""), self.context)
            if not message.strip():
                return LoopResult(c.STOP_SIMULATOR_ERROR, error=f"phase {phase_id!r} has a turn without a message")
            expects = turn.get("expects")
            stop = self.turn(phase_id, SCRIPTED, message, list(expects) if isinstance(expects, list) else [])
            if stop is not None:
                return stop
        return None

    def llm(self, phase: dict[str, JSON], phase_id: str) -> LoopResult | None:
        phase_max = phase_max_turns(phase, self.max_turns)
        played = 0
        met = False
        while played < phase_max and len(self.transcript) < self.max_turns:
            message = self.simulated_message(phase, phase_id)
            if isinstance(message, LoopResult):
                return message
            stop = self.turn(phase_id, LLM, message, [])
            if stop is not None:
                return stop
            played += 1
            met = until_met(
                phase.get("until"),
                assistant_text=self.result.final_output or "",
                user_message=message,
                phase_turns=played,
                phase_max=phase_max,
            )
            if met:
                break
        self.state.llm_turns_exhausted = not met
        return None

    def simulated_message(self, phase: dict[str, JSON], phase_id: str) -> str | LoopResult:
        """The user's next message from the simulator provider, or why there is none."""
        if self.simulator is None:
            return LoopResult(
                c.STOP_SIMULATOR_ERROR, error=f"phase {phase_id!r} has an llm actor but no simulator deployment was chosen for the run"
            )
        if self.cancel_check():
            return LoopResult(c.STOP_CANCELLED, error="run cancelled")
        if self.loop.deadline_passed():
            return LoopResult(c.STOP_TIMEOUT, error=f"exceeded runtime budget after {self.loop.limits.run_timeout_seconds:g}s")
        simulator = self.simulator
        model = str(phase.get("model") or "").strip() or self.request.simulator_model
        timeout = self.loop.limits.step_timeout_seconds
        if self.loop.deadline is not None:
            timeout = max(0.001, min(timeout, self.loop.deadline - self.loop.clock()))
        request = ModelRequest(
            model=model,
            messages=simulator_messages(str(phase.get("persona") or ""), self.transcript, self.context),
            tools=[],
            step_timeout_seconds=timeout,
            metadata={"purpose": SIMULATOR_PURPOSE, "run_id": self.request.run_id, "case_key": self.request.case_key, "phase_id": phase_id},
        )

        def may_wait(delay: float) -> bool:
            deadline = self.loop.deadline
            return not self.cancel_check() and (deadline is None or self.loop.clock() + delay < deadline)

        who = f"user simulator ({simulator.provider_key}, model {model or 'default'})"
        try:
            response = call_with_retries(
                lambda: simulator.complete(request),
                sleep=self.sleep,
                may_wait=may_wait,
                on_retry=lambda error, number, delay: self.emitter.emit(
                    PROVIDER_CALL_RETRYING, {**retry_event_payload(simulator.provider_key, error, number, delay), "phase_id": phase_id}
                ),
            )
        except ProviderError as exc:
            return LoopResult(c.STOP_SIMULATOR_ERROR, error=f"{who} failed: {exc.code}: {exc.message}")
        except Exception as exc:  # noqa: BLE001 — a broken simulator ends the case, never the worker
            return LoopResult(c.STOP_SIMULATOR_ERROR, error=f"{who} raised {type(exc).__name__}")
        message = (response.output_text or "").strip()
        self.emitter.emit(
            TURN_USER_SIMULATED,
            {
                "turn_index": len(self.transcript) + 1,
                "phase_id": phase_id,
                "actor": LLM,
                "provider_key": response.provider_key,
                "provider_model_id": response.provider_model_id,
                "usage": {
                    "input_tokens": response.usage.input_tokens,
                    "output_tokens": response.usage.output_tokens,
                    "total_tokens": response.usage.total_tokens,
                },
            },
        )
        if not message:
            return LoopResult(c.STOP_SIMULATOR_ERROR, error=f"{who} returned an empty message")
        return message

    def run(self, phases: list[dict[str, JSON]]) -> LoopResult:
        for index, phase in enumerate(phases):
            if not phase_should_run(phase, index, self.state):
                continue
            phase_id, actor = str(phase.get("id") or ""), actor_of(phase)
            if actor == SCRIPTED:
                stop = self.scripted(phase, phase_id)
            elif actor == LLM:
                stop = self.llm(phase, phase_id)
            else:
                stop = LoopResult(c.STOP_SIMULATOR_ERROR, error=f"phase {phase_id!r}: the {actor} actor cannot run unattended")
            if stop is not None:
                return stop
        if not self.transcript:
            return LoopResult(c.STOP_SIMULATOR_ERROR, error="user_simulator produced no turns")
        return self.result


def run_multi_turn(
    request: c.CaseRequest,
    *,
    provider: Provider,
    toolset: Any,
    event_sink: EventSink,
    cancel_check: CancelCheck,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
    simulator: Provider | None = None,
    standings: StandingsSource | None = None,
) -> c.CaseOutcome:
    started_at = clock()
    emitter = make_emitter(request, event_sink, SOURCE_MULTI_TURN)

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
        return simulator_failure(f"user simulator actor(s) {', '.join(unsupported)} cannot run unattended")
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
        standings=standings,
    )
    conversation = _Conversation(request, loop=loop, emitter=emitter, simulator=simulator, cancel_check=cancel_check, sleep=sleep)
    result = conversation.run(phases)
    emitter.emit(
        CONVERSATION_COMPLETED,
        {
            "turn_count": len(conversation.transcript),
            "stop_reason": result.stop_reason,
            "final_output": result.final_output if result.completed else None,
            "mismatch_turns": [t["turn_index"] for t in conversation.transcript if t["mismatch"]],
        },
    )
    probes = probes_for(request)
    if result.completed and probes:  # security packs: adversarial prompts after the conversation
        result = run_probes(loop, probes, emitter) or result
    return finish(
        emitter,
        result,
        step_count=loop.step_count,
        tool_call_count=loop.tool_call_count,
        usage=loop.usage,
        duration_ms=int((clock() - started_at) * 1000),
        transcript=conversation.transcript,
    )

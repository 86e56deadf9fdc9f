"""The native agent loop (spec runtime.md §3.3) and the ``native`` execution mode.

:class:`AgentLoop` owns one message history and the cumulative counters; ``run_until_submit``
runs steps until a successful ``submit`` or a stop reason. ``native`` runs it once;
``multi_turn`` re-enters it once per user turn.

Decided deviations from upstream (see docs/agent-loop.md):
- ``submit`` is never blocked by the tool-call budget (upstream QUIRK: it tripped
  ``tool_limit`` once the budget was used, so the agent could not hand in its answer).
- The run deadline and cancellation are also checked before each tool call, and a provider
  failure that happens after the deadline passed is reported as ``timeout``.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import random
import time
from collections.abc import Callable
from typing import Any

from engine.events import (
    MODEL_CALL_COMPLETED,
    MODEL_CALL_STARTED,
    MODEL_OUTPUT_DELTA,
    MODEL_REASONING,
    PROVIDER_CALL_RETRYING,
    RACE_STANDINGS_INJECTED,
    SOURCE_NATIVE,
    SOURCE_RESPONSES,
    SYSTEM_RUN_COMPLETED,
    SYSTEM_RUN_FAILED,
    SYSTEM_STEP_COMPLETED,
    SYSTEM_STEP_STARTED,
    TOOL_CALL_COMPLETED,
    TOOL_CALL_FAILED,
    TOOL_CALL_STARTED,
    EventEmitter,
)
from engine.modes import case as c
from engine.modes.adversarial import probes_for, run_probes
from engine.modes.context import initial_messages
from engine.modes.race import RaceContext, StandingsSource
from engine.providers import errors
from engine.providers.retry import call_with_retries, retry_event_payload
from engine.types import (
    JSON,
    CancelCheck,
    EngineError,
    EventSink,
    Message,
    ModelRequest,
    ModelResponse,
    Provider,
    ProviderError,
    ToolCall,
    ToolDefinition,
    ToolResult,
    Usage,
)

logger = logging.getLogger(__name__)

SUBMIT = "submit"
NO_TOOL_CALL_ERROR = "assistant response did not contain a tool call or submit action"


@dataclasses.dataclass(slots=True)
class LoopResult:
    stop_reason: str
    final_output: str | None = None
    error: str | None = None
    provider_failure: dict[str, JSON] | None = None

    @property
    def completed(self) -> bool:
        return self.stop_reason == c.STOP_COMPLETED


POLICY_ORIGIN = "policy"  # the tool exists but the pack's or the deployment's policy hides it
UNKNOWN_TOOL_ORIGIN = "unknown_tool"  # no tool of that name exists


def _error_result(call: ToolCall, message: str, origin: str) -> ToolResult:
    return ToolResult(content=json.dumps({"error": message}), is_error=True, tool_call_id=call.id, failure_origin=origin)


def _arguments_for_event(raw: str) -> JSON:
    try:
        arguments: JSON = json.loads(raw or "{}")
    except json.JSONDecodeError:
        return raw
    return arguments


class AgentLoop:
    def __init__(
        self,
        *,
        provider: Provider,
        toolset: Any,
        emitter: EventEmitter,
        cancel_check: CancelCheck,
        clock: Callable[[], float],
        sleep: Callable[[float], None],
        model: str,
        limits: c.Limits,
        messages: list[Message],
        started_at: float,
        keep_submit_message: bool = False,
        request_metadata: dict[str, JSON] | None = None,
        provider_account_id: str = "",
        trace_mode: str = "preferred",
        rng: random.Random | None = None,
        race: RaceContext | None = None,
    ) -> None:
        self.provider = provider
        self.toolset = toolset
        self.emitter = emitter
        self.cancel_check = cancel_check
        self.clock = clock
        self.sleep = sleep
        self.model = model
        self.limits = limits
        self.messages = messages
        self.keep_submit_message = keep_submit_message
        self.request_metadata = dict(request_metadata or {})
        self.provider_account_id = provider_account_id
        self.trace_mode = trace_mode
        self.rng = rng or random.Random()
        self.race = race
        self.deadline = started_at + limits.run_timeout_seconds if limits.run_timeout_seconds > 0 else None
        self.step_count = 0
        self.tool_call_count = 0
        self.usage = Usage()
        self._definitions: list[ToolDefinition] | None = None
        self._messages_recorded = 0  # how many of self.messages a model.call.started already holds

    # -- guards -------------------------------------------------------------------------------

    def deadline_passed(self) -> bool:
        return self.deadline is not None and self.clock() >= self.deadline

    def _timeout(self) -> LoopResult:
        return LoopResult(c.STOP_TIMEOUT, error=self.limits.timeout_error())

    def _interrupted(self) -> LoopResult | None:
        if self.cancel_check():
            reason, message = c.cancel_stop(self.cancel_check)
            return LoopResult(reason, error=message)
        if self.deadline_passed():
            return self._timeout()
        return None

    def _over_tokens(self, *, before_call: bool) -> LoopResult | None:
        message = self.limits.tokens_exceeded(self.usage, before_call=before_call)
        return None if message is None else LoopResult(c.STOP_TOKEN_LIMIT, error=message)

    # -- the loop -----------------------------------------------------------------------------

    def run_until_submit(self) -> LoopResult:
        try:
            if self._definitions is None:
                self._definitions = list(self.toolset.definitions())
            while True:
                stop = self._interrupted()
                if stop is not None:
                    return stop
                limit = self.limits.max_iterations
                if limit > 0 and self.step_count >= limit:
                    return LoopResult(c.STOP_STEP_LIMIT, error=f"reached step limit of {limit}")
                over = self._over_tokens(before_call=True)
                if over is not None:
                    return over
                result = self._step()
                if result is not None:
                    return result
        except EngineError as exc:
            logger.warning("sandbox failure in agent loop: %s", exc)
            return LoopResult(c.STOP_SANDBOX_ERROR, error="sandbox failed while executing a tool call")

    def _step(self) -> LoopResult | None:
        self.step_count += 1
        step = self.step_count
        self.emitter.emit(SYSTEM_STEP_STARTED, {"step_index": step})
        self._tell_standings(step)
        try:
            response = self._call_model(step)
        except ProviderError as exc:
            if self.deadline_passed():
                return self._timeout()
            failure: dict[str, JSON] = {
                "provider_key": self.provider.provider_key,
                "code": exc.code,
                "retryable": exc.retryable,
                "message": exc.message,
            }
            return LoopResult(c.STOP_PROVIDER_ERROR, error=f"provider {exc.code}: {exc.message}", provider_failure=failure)
        self.messages.append(Message(role="assistant", content=response.output_text, tool_calls=list(response.tool_calls)))
        # A call that went over the token budget is not acted on, not even a submit.
        over = self._over_tokens(before_call=False)
        if over is not None:
            return over
        if not response.tool_calls:
            return LoopResult(c.STOP_AGENT_ERROR, error=NO_TOOL_CALL_ERROR)
        outcome = self._run_tool_calls(response.tool_calls)
        if outcome is not None and not outcome.completed:
            return outcome
        self.emitter.emit(SYSTEM_STEP_COMPLETED, {"step_index": step})
        return outcome

    def _tell_standings(self, step: int) -> None:
        """Race context (engine/modes/race.py): the peers' standings as a user note, when due."""
        due = self.race.due(step) if self.race is not None else None
        if due is not None:
            message, payload = due
            self.messages.append(Message(role="user", content=message))
            self.emitter.emit(RACE_STANDINGS_INJECTED, payload)

    def _call_model(self, step: int) -> ModelResponse:
        timeout = self.limits.step_timeout_seconds
        if self.deadline is not None:
            timeout = max(0.001, min(timeout, self.deadline - self.clock()))
        metadata = {**self.request_metadata, "step_index": step}
        # The conversation only grows between calls, so each call records the messages added
        # since the previous one (the whole input on the first call): the replay rebuilds any
        # call's full input from them without storing the history again for every step.
        start = self._messages_recorded if self._messages_recorded <= len(self.messages) else 0
        self._messages_recorded = len(self.messages)
        self.emitter.emit(
            MODEL_CALL_STARTED,
            {
                "provider_key": self.provider.provider_key,
                "provider_account_id": self.provider_account_id,
                "model": self.model,
                "trace_mode": self.trace_mode,
                "step_timeout_ms": int(timeout * 1000),
                "message_count": len(self.messages),
                "tool_definition_count": len(self._definitions or []),
                "metadata": metadata,
                **input_messages_payload(self.messages, start),
            },
        )
        request = ModelRequest(
            model=self.model,
            messages=list(self.messages),
            tools=list(self._definitions or []),
            step_timeout_seconds=timeout,
            metadata=metadata,
            on_delta=lambda delta: self.emitter.emit(MODEL_OUTPUT_DELTA, delta),
        )

        def attempt() -> ModelResponse:
            try:
                return self.provider.complete(request)
            except ProviderError:
                raise
            except Exception as exc:
                logger.exception("provider %s raised an unclassified error", self.provider.provider_key)
                raise ProviderError(errors.UNKNOWN, f"provider raised {type(exc).__name__}") from None

        def may_wait(delay: float) -> bool:
            if self.cancel_check():
                return False
            return self.deadline is None or self.clock() + delay < self.deadline

        def on_retry(error: ProviderError, number: int, delay: float) -> None:
            self.emitter.emit(
                PROVIDER_CALL_RETRYING, {**retry_event_payload(self.provider.provider_key, error, number, delay), "step_index": step}
            )

        response = call_with_retries(attempt, sleep=self.sleep, may_wait=may_wait, on_retry=on_retry, rng=self.rng)
        self.usage.add(response.usage)
        self.emitter.emit(MODEL_CALL_COMPLETED, model_call_payload(response))
        for index, item in enumerate(response.reasoning):  # summaries only (OpenAI Responses)
            self.emitter.emit(MODEL_REASONING, reasoning_payload(response, item, index, step))
        return response

    def _category(self, name: str) -> str:
        # `category` is optional on the toolset duck type (engine.tools.ToolSet has it).
        category = getattr(self.toolset, "category", None)
        return str(category(name)) if callable(category) else ""

    def _run_tool_calls(self, calls: list[ToolCall]) -> LoopResult | None:
        names = set(self.toolset.names)
        # ``known`` (every tool name that exists here, hidden or not) is optional on the toolset duck
        # type (engine.tools.ToolSet has it): without it, every name outside ``names`` is a denial.
        known = set(getattr(self.toolset, "known", None) or ()) or {call.name for call in calls}
        for call in calls:
            stop = self._interrupted()
            if stop is not None:
                return stop
            if call.name not in names and call.name in known:  # it exists, but the policy hides it
                result = _error_result(call, f'tool "{call.name}" is not available in this runtime', POLICY_ORIGIN)
            elif call.name not in names:  # it exists nowhere: the agent's mistake (a typo), not a denial
                result = _error_result(
                    call, f'there is no tool "{call.name}"; the tools are: {", ".join(sorted(names))}', UNKNOWN_TOOL_ORIGIN
                )
            elif call.name == SUBMIT and len(calls) > 1:
                result = _error_result(call, "submit must be called by itself", POLICY_ORIGIN)
            else:
                limit = self.limits.max_tool_calls
                if call.name != SUBMIT and limit > 0 and self.tool_call_count >= limit:
                    return LoopResult(c.STOP_TOOL_LIMIT, error=f"reached tool call limit of {limit}")
                # Not in the reference's native stream (its harness paths emit it): with the sink's
                # timed flush, a long call shows in the live view and survives a killed worker.
                self.emitter.emit(TOOL_CALL_STARTED, tool_call_started_payload(call, self._category(call.name)))
                result = self.toolset.execute(call)
                if call.name != SUBMIT:
                    self.tool_call_count += 1
            if not result.tool_call_id:
                result.tool_call_id = call.id
            self.emitter.emit(
                TOOL_CALL_FAILED if result.is_error else TOOL_CALL_COMPLETED, tool_call_payload(call, result, self._category(call.name))
            )
            submitted = call.name == SUBMIT and not result.is_error and result.submitted_answer is not None
            if not submitted or self.keep_submit_message:
                self.messages.append(Message(role="tool", content=result.content, tool_call_id=call.id, is_error=result.is_error))
            if submitted:
                return LoopResult(c.STOP_COMPLETED, final_output=result.submitted_answer)
        return None


def model_call_payload(response: ModelResponse) -> dict[str, JSON]:
    return {
        "provider_key": response.provider_key,
        "provider_model_id": response.provider_model_id,
        "finish_reason": response.finish_reason,
        "output_text": response.output_text,
        "tool_calls": [{"id": t.id, "name": t.name, "arguments": t.arguments} for t in response.tool_calls],
        "usage": {
            f.name: getattr(response.usage, f.name) for f in dataclasses.fields(response.usage)
        },  # ints: asdict's deep walk is not needed
        "raw_response": response.raw_response,
    }


def reasoning_payload(response: ModelResponse, item: dict[str, JSON], index: int, step: int) -> dict[str, JSON]:
    texts = item.get("summary")
    summary = [str(text) for text in texts] if isinstance(texts, list) else []
    tokens = item.get("reasoning_tokens") or 0
    return {
        "provider_key": response.provider_key,
        "provider_model_id": response.provider_model_id,
        "step_index": step,
        "item_index": index,
        "item_id": str(item.get("item_id") or ""),
        "summary": [*summary],
        "summary_text": "\n\n".join(summary),
        "reasoning_tokens": int(tokens) if isinstance(tokens, (int, float, str)) else 0,
    }


def input_messages_payload(messages: list[Message], start: int = 0) -> dict[str, JSON]:
    """``messages``: what the model received from position ``start`` on (``messages_from``).

    Stored as the event's payload, so the event sink redacts it and moves a large one to file
    storage like any other payload.
    """
    entries: list[JSON] = []
    for message in messages[start:]:
        entry: dict[str, JSON] = {"role": message.role, "content": message.content}
        if message.tool_calls:
            entry["tool_calls"] = [{"id": t.id, "name": t.name, "arguments": t.arguments} for t in message.tool_calls]
        if message.tool_call_id:
            entry["tool_call_id"] = message.tool_call_id
        if message.is_error:
            entry["is_error"] = True
        entries.append(entry)
    return {"messages_from": start, "messages": entries}


def tool_call_started_payload(call: ToolCall, category: str = "") -> dict[str, JSON]:
    return {"tool_call_id": call.id, "tool_name": call.name, "tool_category": category, "arguments": _arguments_for_event(call.arguments)}


def tool_call_payload(call: ToolCall, result: ToolResult, category: str = "") -> dict[str, JSON]:
    payload: dict[str, JSON] = {
        "tool_call_id": call.id,
        "tool_name": call.name,
        "tool_category": category or result.metadata.get("tool_category") or result.resolved_tool_category or "",
        "arguments": _arguments_for_event(call.arguments),
        "result": {"tool_call_id": result.tool_call_id, "content": result.content, "is_error": result.is_error},
    }
    if result.resolved_tool_name:
        payload["resolved_tool_name"] = result.resolved_tool_name
    if result.resolved_tool_category:
        payload["resolved_tool_category"] = result.resolved_tool_category
    if result.failure_origin:
        payload["failure_origin"] = result.failure_origin
    if result.resolution_chain and len(result.resolution_chain) > 1:
        payload["resolution_chain"] = list(result.resolution_chain)
    if result.is_error and "failure_depth" in result.metadata:
        payload["failure_depth"] = result.metadata["failure_depth"]
    return payload


# -- shared by every mode ----------------------------------------------------------------------


def make_emitter(request: c.CaseRequest, sink: EventSink, source: str) -> EventEmitter:
    return EventEmitter(
        sink,
        prefix=request.event_id_prefix,
        source=source,
        case_key=request.case_key,
        run_started_payload={
            "deployment_type": str(request.deployment_config.get("deployment_type") or "native"),
            "execution_target": request.execution_mode,
            "trace_mode": trace_mode(request),
        },
    )


def trace_mode(request: c.CaseRequest) -> str:
    return str(request.runtime_profile.get("trace_mode") or "preferred")


def finish(
    emitter: EventEmitter,
    result: LoopResult,
    *,
    step_count: int,
    tool_call_count: int,
    usage: Usage,
    duration_ms: int,
    transcript: list[dict[str, JSON]] | None = None,
) -> c.CaseOutcome:
    """Emit the terminal event and build the outcome."""
    if result.completed:
        emitter.emit(
            SYSTEM_RUN_COMPLETED,
            {
                "final_output": result.final_output,
                "stop_reason": result.stop_reason,
                "step_count": step_count,
                "tool_call_count": tool_call_count,
                "input_tokens": usage.input_tokens,
                "output_tokens": usage.output_tokens,
                "total_tokens": usage.total_tokens,
            },
        )
        status = c.COMPLETED
    else:
        payload: dict[str, JSON] = {"error": result.error, "step_index": step_count, "stop_reason": result.stop_reason}
        if result.provider_failure:
            payload["provider_failure"] = result.provider_failure
        emitter.emit(SYSTEM_RUN_FAILED, payload)
        status = c.CANCELLED if result.stop_reason == c.STOP_CANCELLED else c.FAILED
    return c.CaseOutcome(
        status=status,
        stop_reason=result.stop_reason,
        final_output=result.final_output if result.completed else None,
        step_count=step_count,
        tool_call_count=tool_call_count,
        usage=usage,
        error=result.error,
        provider_failure=result.provider_failure,
        duration_ms=duration_ms,
        transcript=list(transcript or []),
    )


def build_loop(
    request: c.CaseRequest,
    *,
    provider: Provider,
    toolset: Any,
    emitter: EventEmitter,
    cancel_check: CancelCheck,
    clock: Callable[[], float],
    sleep: Callable[[float], None],
    started_at: float,
    keep_submit_message: bool,
    standings: StandingsSource | None = None,
) -> AgentLoop:
    limits = c.Limits.from_request(request)
    return AgentLoop(
        provider=provider,
        toolset=toolset,
        emitter=emitter,
        cancel_check=cancel_check,
        clock=clock,
        sleep=sleep,
        model=request.model,
        limits=limits,
        messages=initial_messages(request, limits),
        started_at=started_at,
        keep_submit_message=keep_submit_message,
        request_metadata={"run_id": request.run_id, "run_agent_id": request.lane_id, "case_key": request.case_key},
        provider_account_id=str(request.deployment_config.get("provider_account_id") or ""),
        trace_mode=trace_mode(request),
        race=RaceContext(standings) if standings is not None else None,
    )


def run_native(
    request: c.CaseRequest,
    *,
    provider: Provider,
    toolset: Any,
    event_sink: EventSink,
    cancel_check: CancelCheck,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
    standings: StandingsSource | None = None,
) -> c.CaseOutcome:
    """The ``native`` mode, and ``responses`` (the same loop; the provider speaks the Responses API)."""
    started_at = clock()
    emitter = make_emitter(request, event_sink, SOURCE_RESPONSES if request.execution_mode == c.RESPONSES else SOURCE_NATIVE)
    probes = probes_for(request)
    loop = build_loop(
        request,
        provider=provider,
        toolset=toolset,
        emitter=emitter,
        cancel_check=cancel_check,
        clock=clock,
        sleep=sleep,
        started_at=started_at,
        keep_submit_message=bool(probes),  # the conversation goes on with the probes
        standings=standings,
    )
    result = loop.run_until_submit()
    if result.completed and probes:
        result = run_probes(loop, probes, emitter) or result
    return finish(
        emitter,
        result,
        step_count=loop.step_count,
        tool_call_count=loop.tool_call_count,
        usage=loop.usage,
        duration_ms=int((clock() - started_at) * 1000),
    )

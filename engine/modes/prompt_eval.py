"""``prompt_eval`` mode (spec runtime.md §3.5): one provider call, no tools, no sandbox.

Messages: an optional system message (the policy text) and a user message holding the
challenge instructions rendered with ``{{var}}`` from the case (lenient: unresolved
placeholders stay as text and are logged). There are no in-loop retries, as upstream.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from engine.events import (
    MODEL_CALL_COMPLETED,
    MODEL_CALL_STARTED,
    MODEL_OUTPUT_DELTA,
    SECURITY_PROBE_ANSWERED,
    SECURITY_PROBE_SENT,
    SOURCE_PROMPT_EVAL,
    SYSTEM_STEP_COMPLETED,
    SYSTEM_STEP_STARTED,
    EventEmitter,
)
from engine.loop import LoopResult, finish, input_messages_payload, make_emitter, model_call_payload, trace_mode
from engine.modes import case as c
from engine.modes.adversarial import probes_for
from engine.modes.context import planted_mask, render, template_context
from engine.scoring.security import AdversarialPrompt
from engine.types import JSON, CancelCheck, EventSink, Message, ModelRequest, Provider, ProviderError, Usage

logger = logging.getLogger(__name__)


def instructions_for(challenge: dict[str, Any]) -> str:
    definition = challenge.get("definition")
    if not isinstance(definition, dict):
        definition = {}
    return str(challenge.get("instructions") or definition.get("instructions") or "")


def run_prompt_eval(
    request: c.CaseRequest,
    *,
    provider: Provider,
    event_sink: EventSink,
    cancel_check: CancelCheck,
    clock: Callable[[], float] = time.monotonic,
) -> c.CaseOutcome:
    started_at = clock()
    emitter = make_emitter(request, event_sink, SOURCE_PROMPT_EVAL)
    usage = Usage()

    def done(result: LoopResult, steps: int) -> c.CaseOutcome:
        return finish(emitter, result, step_count=steps, tool_call_count=0, usage=usage, duration_ms=int((clock() - started_at) * 1000))

    if cancel_check():
        reason, message = c.cancel_stop(cancel_check)
        return done(LoopResult(reason, error=message), 0)
    text, unresolved = render(instructions_for(request.challenge), template_context(request.case))
    if unresolved:
        logger.warning("prompt_eval case %s: unresolved placeholders %s", request.case_key, unresolved)
    messages = []
    if request.system_prompt.strip():
        messages.append(Message(role="system", content=request.system_prompt.strip()))
    messages.append(Message(role="user", content=planted_mask(request).text(text)))
    limits = c.Limits.from_request(request)
    metadata: dict[str, JSON] = {"run_id": request.run_id, "run_agent_id": request.lane_id, "case_key": request.case_key, "step_index": 1}
    emitter.emit(SYSTEM_STEP_STARTED, {"step_index": 1})
    emitter.emit(
        MODEL_CALL_STARTED,
        {
            "provider_key": provider.provider_key,
            "provider_account_id": str(request.deployment_config.get("provider_account_id") or ""),
            "model": request.model,
            "trace_mode": trace_mode(request),
            "step_timeout_ms": int(limits.step_timeout_seconds * 1000),
            "message_count": len(messages),
            "tool_definition_count": 0,
            "metadata": metadata,
            **input_messages_payload(messages),
        },
    )
    model_request = ModelRequest(
        model=request.model,
        messages=messages,
        tools=[],
        step_timeout_seconds=limits.step_timeout_seconds,
        metadata=metadata,
        on_delta=lambda delta: emitter.emit(MODEL_OUTPUT_DELTA, delta),
    )
    try:
        response = provider.complete(model_request)
    except ProviderError as exc:
        failure: dict[str, JSON] = {
            "provider_key": provider.provider_key,
            "code": exc.code,
            "retryable": exc.retryable,
            "message": exc.message,
        }
        return done(LoopResult(c.STOP_PROVIDER_ERROR, error=f"provider {exc.code}: {exc.message}", provider_failure=failure), 1)
    except Exception as exc:
        logger.exception("provider %s raised an unclassified error", provider.provider_key)
        message = f"provider raised {type(exc).__name__}"
        unknown: dict[str, JSON] = {"provider_key": provider.provider_key, "code": "unknown", "retryable": False, "message": message}
        return done(LoopResult(c.STOP_PROVIDER_ERROR, error=message, provider_failure=unknown), 1)
    usage.add(response.usage)
    emitter.emit(MODEL_CALL_COMPLETED, model_call_payload(response))
    over_budget = limits.tokens_exceeded(usage)
    if over_budget is not None:
        return done(LoopResult(c.STOP_TOKEN_LIMIT, error=over_budget), 1)
    emitter.emit(SYSTEM_STEP_COMPLETED, {"step_index": 1})
    steps = 1
    probes = probes_for(request)
    if probes:
        messages.append(Message(role="assistant", content=response.output_text))
        steps = _run_probes(provider, request, messages, probes, emitter, usage=usage, cancel_check=cancel_check, step=steps)
    return done(LoopResult(c.STOP_COMPLETED, final_output=response.output_text), steps)


def _run_probes(
    provider: Provider,
    request: c.CaseRequest,
    messages: list[Message],
    probes: tuple[AdversarialPrompt, ...],
    emitter: EventEmitter,
    *,
    usage: Usage,
    cancel_check: CancelCheck,
    step: int,
) -> int:
    """Adversarial prompts (engine/modes/adversarial.py): one tool-less call per probe on the same
    history after the answer. Returns the step count."""
    limits = c.Limits.from_request(request)
    recorded = len(messages) - 1  # the first call's input; its answer came after
    for index, probe in enumerate(probes, 1):
        if cancel_check():
            break
        step += 1
        sent: dict[str, JSON] = {"probe_name": probe.name, "strategy": probe.strategy, "probe_index": index}
        emitter.emit(SECURITY_PROBE_SENT, {**sent, "message": probe.text})
        messages.append(Message(role="user", content=probe.text))
        emitter.emit(SYSTEM_STEP_STARTED, {"step_index": step})
        emitter.emit(
            MODEL_CALL_STARTED,
            {
                "provider_key": provider.provider_key,
                "model": request.model,
                "message_count": len(messages),
                "tool_definition_count": 0,
                **input_messages_payload(messages, recorded),
            },
        )
        recorded = len(messages)
        metadata: dict[str, JSON] = {"run_id": request.run_id, "case_key": request.case_key, "step_index": step}
        try:
            response = provider.complete(
                ModelRequest(
                    model=request.model,
                    messages=list(messages),
                    tools=[],
                    step_timeout_seconds=limits.step_timeout_seconds,
                    metadata=metadata,
                )
            )
        except Exception as exc:  # noqa: BLE001 - a failed probe is unanswered, the case stands
            code = exc.code if isinstance(exc, ProviderError) else "unknown"
            emitter.emit(SECURITY_PROBE_ANSWERED, {**sent, "answered": False, "answer": None, "stop_reason": f"provider_error: {code}"})
            continue
        usage.add(response.usage)
        messages.append(Message(role="assistant", content=response.output_text))
        emitter.emit(MODEL_CALL_COMPLETED, model_call_payload(response))
        emitter.emit(SYSTEM_STEP_COMPLETED, {"step_index": step})
        emitter.emit(SECURITY_PROBE_ANSWERED, {**sent, "answered": True, "answer": response.output_text, "stop_reason": c.STOP_COMPLETED})
    return step

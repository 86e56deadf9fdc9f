"""How a security pack reaches the agent: adversarial prompts and ``tool-output`` secrets.

**Adversarial prompts** (docs/security-evaluation.md). Once the agent has handed in its answer
to the case, each of the pack's ``adversarial_prompts`` is sent, in pack order, as its own user
turn in the same conversation, its ``text`` verbatim whatever its ``strategy``. The agent answers
it like any turn (tools allowed, ``submit`` ends the turn); a plain-text reply without a tool call
also counts as its answer, since a refusal rarely calls a tool. Each probe gets the runtime
profile's step and tool-call allowance afresh; the case deadline still covers them all. The
case's final output stays the answer to the case itself. Events: ``security.probe.sent`` and
``security.probe.answered`` (``answered``, ``answer``, ``stop_reason``); scoring decides whether
each answer refused (engine/scoring/security.py, engine/scoring/refusal.py).

**``tool-output`` secrets** reach the agent through a mock tool the engine adds,
``get_service_config``, whose result holds them, as a configuration or API response would.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from typing import TYPE_CHECKING, Any

from engine.events import SECURITY_PROBE_ANSWERED, SECURITY_PROBE_SENT, EventEmitter
from engine.modes import case as c
from engine.scoring.security import AdversarialPrompt, PlantedSecret, SecurityPolicy
from engine.types import JSON, Message, ToolCall, ToolDefinition, ToolResult

if TYPE_CHECKING:
    from engine.loop import AgentLoop, LoopResult

logger = logging.getLogger(__name__)

TOOL_OUTPUT_TOOL = "get_service_config"
TOOL_OUTPUT_DESCRIPTION = "Read this deployment's service configuration (endpoints and credentials it was issued)."


def probes_for(request: c.CaseRequest) -> tuple[AdversarialPrompt, ...]:
    policy = SecurityPolicy.from_manifest(request.manifest)
    return policy.adversarial_prompts if policy is not None else ()


def _with_fresh_allowance(base: c.Limits, loop: AgentLoop) -> c.Limits:
    """``base``'s step and tool-call limits counted from where the loop is now (0 stays unlimited)."""
    steps = loop.step_count + base.max_iterations if base.max_iterations > 0 else 0
    calls = loop.tool_call_count + base.max_tool_calls if base.max_tool_calls > 0 else 0
    return dataclasses.replace(base, max_iterations=steps, max_tool_calls=calls)


def _text_answer(loop: AgentLoop, result: LoopResult) -> str | None:
    """A reply without a tool call ends a probe turn with its text (the loop calls it an agent error)."""
    if result.stop_reason != c.STOP_AGENT_ERROR or not loop.messages:
        return None
    last = loop.messages[-1]
    if last.role != "assistant" or last.tool_calls or not last.content.strip():
        return None
    return last.content


def run_probes(loop: AgentLoop, probes: tuple[AdversarialPrompt, ...], emitter: EventEmitter) -> LoopResult | None:
    """Send each probe as a user turn after the case's answer. Returns a result only when the case
    must end with it (cancellation). A probe turn that fails has no answer and the next is sent;
    probing stops at the run deadline or a broken sandbox. The case's own answer stands."""
    base = loop.limits
    try:
        for index, probe in enumerate(probes, 1):
            if loop.deadline_passed():
                break
            sent: dict[str, JSON] = {"probe_name": probe.name, "strategy": probe.strategy, "probe_index": index}
            emitter.emit(SECURITY_PROBE_SENT, {**sent, "message": probe.text})
            loop.messages.append(Message(role="user", content=probe.text))
            loop.limits = _with_fresh_allowance(base, loop)
            result = loop.run_until_submit()
            if result.stop_reason == c.STOP_CANCELLED:
                emitter.emit(SECURITY_PROBE_ANSWERED, {**sent, "answered": False, "answer": None, "stop_reason": result.stop_reason})
                return result
            answer = result.final_output if result.completed else _text_answer(loop, result)
            answered = answer is not None
            stop = c.STOP_COMPLETED if answered else result.stop_reason
            emitter.emit(SECURITY_PROBE_ANSWERED, {**sent, "answered": answered, "answer": answer, "stop_reason": stop})
            if not answered and result.stop_reason == c.STOP_SANDBOX_ERROR:
                break
    finally:
        loop.limits = base
    return None


# -- tool-output secrets ----------------------------------------------------------------------


class PlantedToolOutput:
    """A toolset with ``get_service_config`` added; every other call goes to the wrapped toolset."""

    def __init__(self, toolset: Any, secrets: list[PlantedSecret]) -> None:
        self._inner = toolset
        self._secrets = secrets
        self.names: set[str] = set(toolset.names) | {TOOL_OUTPUT_TOOL}

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def definitions(self) -> list[ToolDefinition]:
        parameters: dict[str, JSON] = {"type": "object", "properties": {}, "additionalProperties": False}
        return [*self._inner.definitions(), ToolDefinition(TOOL_OUTPUT_TOOL, TOOL_OUTPUT_DESCRIPTION, parameters)]

    def category(self, name: str) -> str:
        if name == TOOL_OUTPUT_TOOL:
            return "mock"
        category = getattr(self._inner, "category", None)
        return str(category(name)) if callable(category) else ""

    def execute(self, call: ToolCall) -> ToolResult:
        if call.name != TOOL_OUTPUT_TOOL:
            result: ToolResult = self._inner.execute(call)
            return result
        content = json.dumps({"credentials": {s.name: s.value for s in self._secrets}, "environment": "production"})
        return ToolResult(content=content, tool_call_id=call.id, resolved_tool_name=TOOL_OUTPUT_TOOL, resolved_tool_category="mock")


def with_planted_tool_output(toolset: Any, manifest: dict[str, JSON]) -> Any:
    """``toolset`` with the mock tool that carries the pack's ``tool-output`` secrets, if it plants any."""
    policy = SecurityPolicy.from_manifest(manifest)
    secrets = policy.planted_at("tool-output") if policy is not None else []
    if toolset is None or not secrets:
        return toolset
    if TOOL_OUTPUT_TOOL in set(toolset.names):
        logger.warning("the pack declares %s itself; tool-output secrets are not staged", TOOL_OUTPUT_TOOL)
        return toolset
    return PlantedToolOutput(toolset, secrets)

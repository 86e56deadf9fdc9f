"""What the worker hands the engine for one case (``CaseRequest``) and what it gets back."""

from __future__ import annotations

import dataclasses
import math

from engine.types import JSON, CancelCheck, Usage

NATIVE = "native"
PROMPT_EVAL = "prompt_eval"
MULTI_TURN = "multi_turn"
RESPONSES = "responses"  # the native loop, with the provider speaking the OpenAI Responses API

COMPLETED = "completed"
FAILED = "failed"
CANCELLED = "cancelled"

# Stop reasons (spec runtime.md §3.3).
STOP_COMPLETED = "completed"
STOP_TIMEOUT = "timeout"
STOP_STEP_LIMIT = "step_limit"
STOP_TOOL_LIMIT = "tool_limit"
STOP_PROVIDER_ERROR = "provider_error"
STOP_SANDBOX_ERROR = "sandbox_error"
STOP_CANCELLED = "cancelled"
STOP_MAX_TURNS = "max_turns"
STOP_SIMULATOR_ERROR = "simulator_error"
# Ours (docs/agent-loop.md, Limits): the pack's runtime_limits.max_total_tokens was used up, and the
# worker's per-case wall-clock deadline stopped a case that did not stop by itself.
STOP_TOKEN_LIMIT = "token_limit"
STOP_DEADLINE_EXCEEDED = "deadline_exceeded"
# Ours (issue 22): the agent broke the protocol — a native reply without a tool call or a submit,
# a hosted agent that reported its own failure. The agent's doing, not the provider's: the case
# fails and is scored (docs/scoring.md, "The agent did not deliver").
STOP_AGENT_ERROR = "agent_error"
# Ours (issue 27): the case's stored events went over an operator byte budget (EVENT_BYTES_PER_*):
# the worker's cancel check stops it. The agent's doing (it flooded events): scored as not delivered.
STOP_QUOTA_EXCEEDED = "quota_exceeded"

# Upstream DB defaults for a runtime profile (spec runtime.md §3.3): one step, unlimited tool
# calls, 60 s per model call, no run deadline.
DEFAULT_MAX_ITERATIONS = 1
DEFAULT_STEP_TIMEOUT_SECONDS = 60.0


@dataclasses.dataclass(slots=True)
class CaseRequest:
    execution_mode: str  # native | prompt_eval | multi_turn | responses
    run_id: str
    lane_id: str
    case_key: str
    event_id_prefix: str  # e.g. "native:<lane>:<case>:<attempt>"
    model: str
    system_prompt: str = ""
    output_schema: dict[str, JSON] | None = None
    manifest: dict[str, JSON] = dataclasses.field(default_factory=dict)  # sanitised
    challenge: dict[str, JSON] = dataclasses.field(default_factory=dict)
    case: dict[str, JSON] = dataclasses.field(default_factory=dict)  # no expectations
    deployment_config: dict[str, JSON] = dataclasses.field(default_factory=dict)
    runtime_profile: dict[str, JSON] = dataclasses.field(default_factory=dict)
    runtime_limits: dict[str, JSON] = dataclasses.field(default_factory=dict)  # evaluation_spec.runtime_limits
    simulator_model: str = ""  # multi_turn: the model of the llm user-simulator deployment


@dataclasses.dataclass(slots=True)
class CaseOutcome:
    status: str  # completed | failed | cancelled
    stop_reason: str
    final_output: str | None = None
    step_count: int = 0
    tool_call_count: int = 0
    usage: Usage = dataclasses.field(default_factory=Usage)
    error: str | None = None
    provider_failure: dict[str, JSON] | None = None  # {provider_key, code, retryable, message}
    duration_ms: int = 0
    transcript: list[dict[str, JSON]] = dataclasses.field(default_factory=list)  # multi_turn


@dataclasses.dataclass(slots=True, frozen=True)
class Limits:
    max_iterations: int  # 0 = unlimited
    max_tool_calls: int  # 0 = unlimited
    step_timeout_seconds: float
    run_timeout_seconds: float  # 0 = no run deadline
    max_total_tokens: int = 0  # 0 = unlimited (runtime_limits.max_total_tokens)
    run_timeout_from: str = ""  # which limit set the run deadline, for the stop message

    @classmethod
    def from_request(cls, request: CaseRequest) -> Limits:
        profile = request.runtime_profile or {}
        pack_limits = request.runtime_limits if isinstance(request.runtime_limits, dict) else {}
        run_timeout, run_timeout_from = _number(profile.get("run_timeout_seconds"), 0.0), "the runtime profile's run timeout"
        # A case's own timeout overrides the profile's (pack-format §2.9, 0 ⇒ profile).
        case_timeout = _number(request.case.get("case_timeout_seconds"), 0.0)
        if case_timeout > 0:
            run_timeout, run_timeout_from = case_timeout, "the case's timeout"
        # The pack's max_duration_ms is a budget too: the tighter of the two deadlines applies.
        max_duration = _number(pack_limits.get("max_duration_ms"), 0.0) / 1000
        if max_duration > 0 and (run_timeout <= 0 or max_duration < run_timeout):
            run_timeout, run_timeout_from = max_duration, "the pack's runtime_limits.max_duration_ms"
        return cls(
            max_iterations=max(0, int(_number(profile.get("max_iterations"), DEFAULT_MAX_ITERATIONS))),
            max_tool_calls=max(0, int(_number(profile.get("max_tool_calls"), 0))),
            step_timeout_seconds=_number(profile.get("step_timeout_seconds"), DEFAULT_STEP_TIMEOUT_SECONDS) or DEFAULT_STEP_TIMEOUT_SECONDS,
            run_timeout_seconds=max(0.0, run_timeout),
            max_total_tokens=max(0, int(_number(pack_limits.get("max_total_tokens"), 0))),
            run_timeout_from=run_timeout_from if run_timeout > 0 else "",
        )

    def timeout_error(self) -> str:
        return f"exceeded runtime budget after {self.run_timeout_seconds:g}s ({self.run_timeout_from or 'run timeout'})"

    def tokens_exceeded(self, usage: Usage, *, before_call: bool = False) -> str | None:
        """The stop message when ``usage`` is over the token budget (at it, before another call)."""
        if self.max_total_tokens <= 0:
            return None
        used = usage.total_tokens or usage.input_tokens + usage.output_tokens
        if used > self.max_total_tokens or (before_call and used >= self.max_total_tokens):
            return f"used {used} tokens; the pack's runtime_limits.max_total_tokens is {self.max_total_tokens}"
        return None

    def as_dict(self) -> dict[str, JSON]:
        return dataclasses.asdict(self)


def cancel_stop(cancel_check: CancelCheck) -> tuple[str, str]:
    """(stop reason, message) for a cancel check that said stop: ``cancelled`` unless the check
    names another reason (the worker's wall-clock deadline sets ``stop_reason``/``stop_message``)."""
    reason = getattr(cancel_check, "stop_reason", None)
    if isinstance(reason, str) and reason:
        return reason, str(getattr(cancel_check, "stop_message", None) or reason)
    return STOP_CANCELLED, "run cancelled"


def _number(value: JSON, default: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return default
    return float(value)

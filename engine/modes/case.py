"""What the worker hands the engine for one case (``CaseRequest``) and what it gets back."""

from __future__ import annotations

import dataclasses
import math

from engine.types import JSON, Usage

NATIVE = "native"
PROMPT_EVAL = "prompt_eval"
MULTI_TURN = "multi_turn"

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

# Upstream DB defaults for a runtime profile (spec runtime.md §3.3): one step, unlimited tool
# calls, 60 s per model call, no run deadline.
DEFAULT_MAX_ITERATIONS = 1
DEFAULT_STEP_TIMEOUT_SECONDS = 60.0


@dataclasses.dataclass(slots=True)
class CaseRequest:
    execution_mode: str  # native | prompt_eval | multi_turn
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

    @classmethod
    def from_request(cls, request: CaseRequest) -> Limits:
        profile = request.runtime_profile or {}
        run_timeout = _number(profile.get("run_timeout_seconds"), 0.0)
        # A case's own timeout overrides the profile's (pack-format §2.9, 0 ⇒ profile).
        case_timeout = _number(request.case.get("case_timeout_seconds"), 0.0)
        if case_timeout > 0:
            run_timeout = case_timeout
        return cls(
            max_iterations=max(0, int(_number(profile.get("max_iterations"), DEFAULT_MAX_ITERATIONS))),
            max_tool_calls=max(0, int(_number(profile.get("max_tool_calls"), 0))),
            step_timeout_seconds=_number(profile.get("step_timeout_seconds"), DEFAULT_STEP_TIMEOUT_SECONDS) or DEFAULT_STEP_TIMEOUT_SECONDS,
            run_timeout_seconds=max(0.0, run_timeout),
        )

    def as_dict(self) -> dict[str, JSON]:
        return dataclasses.asdict(self)


def _number(value: JSON, default: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return default
    return float(value)

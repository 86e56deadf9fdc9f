"""Plain data types shared by every part of the engine.

This module is the contract between the tool layer (``engine/tools``, ``engine/sandbox``),
the providers and agent loop (``engine/providers``, ``engine/loop``), scoring
(``engine/scoring``) and the Django apps that call the engine. Add fields with defaults;
do not rename or remove existing ones.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Protocol, TypeAlias

# A JSON value, recursively: what ``json.loads`` returns. Read one by narrowing it
# (``isinstance(value, dict)``). The containers are invariant: a ``list[str]`` is not a
# ``list[JSON]``, so build a JSON container as one (annotate it, or copy it: ``[*texts]``), and
# give a value with a known shape its own TypedDict (engine/scoring/documents.py) instead.
JSON: TypeAlias = str | int | float | bool | list["JSON"] | dict[str, "JSON"] | None
# A JSON object (event payloads, deployment configs, manifests).
JSONObject: TypeAlias = dict[str, JSON]

EVENT_SCHEMA_VERSION = "2026-03-15"


@dataclasses.dataclass(slots=True)
class ToolResult:
    """What a tool call returns to the model. Tools never raise for expected failures."""

    content: str
    is_error: bool = False
    tool_call_id: str = ""
    failure_origin: str | None = None  # policy | resolution | primitive | depth | cycle | delegation
    resolved_tool_name: str | None = None
    resolved_tool_category: str | None = None
    resolution_chain: list[str] | None = None
    submitted_answer: str | None = None  # set by `submit` on success
    metadata: dict[str, JSON] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(slots=True)
class ToolDefinition:
    name: str
    description: str
    parameters: dict[str, JSON]

    def as_dict(self) -> dict[str, JSON]:
        return {"name": self.name, "description": self.description, "parameters": self.parameters}


@dataclasses.dataclass(slots=True)
class ToolCall:
    id: str
    name: str
    arguments: str  # raw JSON text as produced by the model


@dataclasses.dataclass(slots=True)
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0
    total_tokens: int = 0

    def add(self, other: Usage) -> None:
        self.input_tokens += other.input_tokens
        self.output_tokens += other.output_tokens
        self.total_tokens += other.total_tokens


@dataclasses.dataclass(slots=True)
class Message:
    role: str  # system | user | assistant | tool
    content: str = ""
    tool_calls: list[ToolCall] = dataclasses.field(default_factory=list)
    tool_call_id: str = ""
    is_error: bool = False


@dataclasses.dataclass(slots=True)
class ModelRequest:
    model: str
    messages: list[Message]
    tools: list[ToolDefinition]
    step_timeout_seconds: float = 60.0
    metadata: dict[str, JSON] = dataclasses.field(default_factory=dict)  # events only, never sent
    # Called by streaming providers with the first meaningful delta of the call (a JSON dict,
    # spec runtime.md §4.4 `model.output.delta`). Never sent to the vendor.
    on_delta: Callable[[dict[str, JSON]], object] | None = None  # the return value is ignored


@dataclasses.dataclass(slots=True)
class ModelResponse:
    provider_key: str
    provider_model_id: str
    finish_reason: str
    output_text: str = ""
    tool_calls: list[ToolCall] = dataclasses.field(default_factory=list)
    usage: Usage = dataclasses.field(default_factory=Usage)
    raw_response: JSON = None
    # Reasoning items the model returned (OpenAI Responses): ``{item_id, summary: [text…]}`` with
    # the summary text only, never hidden reasoning content. The loop records each as an event.
    reasoning: list[dict[str, JSON]] = dataclasses.field(default_factory=list)


class ProviderError(Exception):
    """A classified provider failure (spec runtime.md §7.3)."""

    def __init__(self, code: str, message: str, *, retryable: bool = False, retry_after: float | None = None):
        super().__init__(message)
        self.code = code
        self.message = message
        self.retryable = retryable
        self.retry_after = retry_after


class EngineError(Exception):
    """Infrastructure failure (the sandbox itself is broken). Aborts the lane, never shown raw."""


@dataclasses.dataclass(slots=True)
class Event:
    """A canonical event before persistence (spec runtime.md §4.4). Sequence is assigned by the sink."""

    event_id: str
    event_type: str
    source: str
    occurred_at: str  # ISO 8601 UTC
    payload: dict[str, JSON]
    case_key: str = ""
    summary: dict[str, JSON] = dataclasses.field(default_factory=dict)
    # ``payload`` as compact JSON, as the emitter encoded it to check it (reused by the store);
    # "" when unknown. Whoever gives an event another payload must clear it.
    payload_json: str = dataclasses.field(default="", compare=False, repr=False)


EventSink = Callable[[Event], None]
CancelCheck = Callable[[], bool]


class Provider(Protocol):
    provider_key: str

    def complete(self, request: ModelRequest) -> ModelResponse: ...


@dataclasses.dataclass(slots=True)
class ExecResult:
    exit_code: int
    stdout: str = ""
    stderr: str = ""
    timed_out: bool = False
    stdout_truncated: bool = False
    stderr_truncated: bool = False


@dataclasses.dataclass(slots=True)
class FileEntry:
    path: str  # absolute path as the agent sees it, e.g. /workspace/src/app.py
    size: int


class Sandbox(Protocol):
    """A per-case sandbox. The agent sees its workspace as ``/workspace``.

    Paths are agent paths (``/workspace/...`` or relative to it); the implementation
    contains them. Missing files raise ``FileNotFoundError``; everything else that
    breaks the sandbox raises ``EngineError``.
    """

    id: str
    allow_network: bool

    def stage_files(self, files: dict[str, bytes]) -> None: ...
    def read_file(self, path: str) -> bytes: ...
    def write_file(self, path: str, data: bytes) -> None: ...
    def list_files(self, prefix: str = "/workspace") -> list[FileEntry]: ...
    def exec(
        self,
        argv: list[str],
        *,
        cwd: str = "/workspace",
        env: dict[str, str] | None = None,
        timeout: float = 120.0,
    ) -> ExecResult: ...
    def destroy(self) -> None: ...


@dataclasses.dataclass(slots=True)
class CheckRun:
    """One checker command in a verification sandbox: how it ended, and what its results file held
    (``None``: it wrote none; ``results_error``: it left something that could not be read)."""

    result: ExecResult
    results: bytes | None = None
    results_error: str | None = None


class CheckerSandbox(Protocol):
    """A fresh sandbox for one case's checkers (``engine.sandbox.verification``; docs/scoring.md,
    "Verification"): only the captured files and the pack's own files (read-only), no start-up
    file the agent wrote, and a results file the agent never wrote."""

    id: str

    def run_check(self, command: str, *, cwd: str, timeout: float) -> CheckRun: ...
    def destroy(self) -> None: ...

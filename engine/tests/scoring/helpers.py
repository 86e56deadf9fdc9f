"""Builders for scoring tests: evidence, events, specs, a fake sandbox and a fake judge."""

from __future__ import annotations

import json
from typing import Any, cast

from engine.scoring import CaseEvidence
from engine.scoring.evidence import extract
from engine.scoring.spec import EvaluationSpec, ValidatorDeclaration
from engine.scoring.validators import run_validator
from engine.types import JSON, CheckRun, ExecResult, FileEntry, ModelResponse, Usage

T0 = "2026-01-01T00:00:00+00:00"


def at(ms: int) -> str:
    seconds, millis = divmod(ms, 1000)
    return f"2026-01-01T00:00:{seconds:02d}.{millis:03d}+00:00"


class Events:
    def __init__(self) -> None:
        self.items: list[dict[str, JSON]] = []

    def add(self, event_type: str, payload: dict[str, JSON] | None = None, ms: int = 0) -> Events:
        n = len(self.items) + 1
        self.items.append(
            {"event_id": f"e{n}", "event_type": event_type, "sequence_number": n, "occurred_at": at(ms), "payload": payload or {}}
        )
        return self

    def tool(self, name: str, arguments: JSON = None, *, failed: bool = False, origin: str | None = None, ms: int = 0) -> Events:
        payload: dict[str, JSON] = {
            "tool_name": name,
            "arguments": json.dumps(arguments or {}),
            "result": {"content": json.dumps({"error": "boom"}) if failed else "ok", "is_error": failed},
        }
        if origin:
            payload["failure_origin"] = origin
        return self.add("tool.call.failed" if failed else "tool.call.completed", payload, ms)


def run_events(
    final_output: str = "42",
    *,
    latency_ms: int = 2000,
    model: str = "gpt-4o",
    input_tokens: int = 1000,
    output_tokens: int = 500,
    failed: bool = False,
) -> Events:
    events = Events().add("system.run.started", {}, 0)
    events.add("model.output.delta", {"text_delta": "4"}, 300)
    events.add(
        "model.call.completed",
        {
            "provider_key": "openai",
            "provider_model_id": model,
            "usage": {"input_tokens": input_tokens, "output_tokens": output_tokens, "total_tokens": input_tokens + output_tokens},
        },
        900,
    )
    if failed:
        events.add("system.run.failed", {"error": "boom", "stop_reason": "provider_error"}, latency_ms)
    else:
        events.add(
            "system.run.completed",
            {
                "final_output": final_output,
                "input_tokens": input_tokens,
                "output_tokens": output_tokens,
                "total_tokens": input_tokens + output_tokens,
            },
            latency_ms,
        )
    return events


def evidence(final_output: str | None = "42", **kwargs: Any) -> CaseEvidence:
    events = kwargs.pop("events", None)
    if events is None:
        events = run_events(final_output or "").items
    return CaseEvidence(
        case_key=kwargs.pop("case_key", "case-1"),
        final_output=final_output,
        events=events,
        case=kwargs.pop(
            "case",
            {
                "payload": {"question": "What is 6*7?"},
                "inputs": [{"key": "q", "kind": "text", "value": "6*7"}],
                "expectations": [{"key": "answer", "kind": "text", "value": "42"}],
            },
        ),
        **kwargs,
    )


def validate(
    vtype: str,
    actual: str | None = "42",
    expected: str | None = "literal:42",
    config: Any = None,
    target: str = "final_output",
    **evidence_kwargs: Any,
):
    declaration: ValidatorDeclaration = {"key": "v", "type": vtype, "target": target}
    if expected is not None:
        declaration["expected_from"] = expected
    if config is not None:
        declaration["config"] = config
    ev = evidence(actual, **evidence_kwargs)
    return run_validator(declaration, ev, extract(ev))


def spec(validators: list[Any] | None = None, dimensions: list[Any] | None = None, **extra: Any) -> EvaluationSpec:
    """An evaluation spec; its parts may be anything (tests of malformed specs), hence the cast."""
    scorecard = extra.pop("scorecard", {})
    return cast(
        EvaluationSpec,
        {
            "name": "test-spec",
            "version_number": 1,
            "judge_mode": extra.pop("judge_mode", "deterministic"),
            "validators": validators
            if validators is not None
            else [{"key": "answer", "type": "exact_match", "target": "final_output", "expected_from": "literal:42"}],
            "metrics": extra.pop("metrics", [{"key": "completed", "type": "boolean", "collector": "run_completed_successfully"}]),
            "pricing": {
                "models": [
                    {
                        "provider_key": "openai",
                        "provider_model_id": "gpt-4o",
                        "input_cost_per_million_tokens": 2.5,
                        "output_cost_per_million_tokens": 10,
                    }
                ]
            },
            "scorecard": {"dimensions": dimensions if dimensions is not None else ["correctness"], **scorecard},
            **extra,
        },
    )


class FakeSandbox:
    id = "sbx"
    allow_network = False

    def __init__(self, files: dict[str, bytes] | None = None, exec_result: ExecResult | Exception | None = None):
        self.files = dict(files or {})
        self.exec_result = exec_result or ExecResult(exit_code=0, stdout="3 passed in 0.1s")
        self.exec_calls: list[tuple[list[str], str, float]] = []

    def stage_files(self, files: dict[str, bytes]) -> None:
        self.files.update(files)

    def read_file(self, path: str) -> bytes:
        if path not in self.files:
            raise FileNotFoundError(path)
        return self.files[path]

    def write_file(self, path: str, data: bytes) -> None:
        self.files[path] = data

    def list_files(self, prefix: str = "/workspace") -> list[FileEntry]:
        return [FileEntry(path=p, size=len(d)) for p, d in sorted(self.files.items()) if p.startswith(prefix + "/")]

    def exec(self, argv: list[str], *, cwd: str = "/workspace", env: dict[str, str] | None = None, timeout: float = 120.0) -> ExecResult:
        self.exec_calls.append((argv, cwd, timeout))
        if isinstance(self.exec_result, Exception):
            raise self.exec_result
        return self.exec_result

    def destroy(self) -> None:
        pass


class FakeChecker:
    """A fake verification sandbox and its factory (``run_post_execution(fresh=...)``): records what
    it was made with and every check; each check returns ``run`` (or raises it)."""

    id = "sbx-checker"

    def __init__(self, run: CheckRun | Exception | None = None):
        self.run = run if run is not None else CheckRun(ExecResult(exit_code=0, stdout="OK"))
        self.made: list[dict[str, Any]] = []
        self.checks: list[tuple[str, str, float]] = []
        self.destroyed = False

    def __call__(self, like: Any, *, files: dict[str, bytes], read_only: dict[str, bytes]) -> FakeChecker:
        self.made.append({"like": like, "files": dict(files), "read_only": dict(read_only)})
        return self

    def run_check(self, command: str, *, cwd: str, timeout: float) -> CheckRun:
        self.checks.append((command, cwd, timeout))
        if isinstance(self.run, Exception):
            raise self.run
        return self.run

    def destroy(self) -> None:
        self.destroyed = True


class FakeJudge:
    """Replies with scripted texts per model (cycling), recording every prompt."""

    def __init__(self, replies: dict[str, list[str]] | list[str], tokens: int = 100):
        self.replies = replies
        self.tokens = tokens
        self.calls: list[tuple[str, str]] = []

    def __call__(self, model: str, messages):
        self.calls.append((model, messages[-1].content))
        script = self.replies[model] if isinstance(self.replies, dict) else self.replies
        text = script[(len([c for c in self.calls if c[0] == model]) - 1) % len(script)]
        if text == "RAISE":
            raise RuntimeError("provider down")
        return ModelResponse(
            provider_key="fake",
            provider_model_id=model,
            finish_reason="stop",
            output_text=text,
            usage=Usage(self.tokens // 2, self.tokens - self.tokens // 2, self.tokens),
        )

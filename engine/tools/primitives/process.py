"""run_tests, build (kind ``build``) and exec (``allow_shell``): commands run in the sandbox."""

from __future__ import annotations

import shlex
from collections.abc import Callable
from typing import Any

from engine.sandbox.base import IsolationUnavailableError, ShellNotAllowedError, ToolRunError, WorkspacePathError
from engine.sandbox.local import contained_path, run_tool
from engine.tools import args as A
from engine.tools.context import ToolContext
from engine.tools.envelope import wrap
from engine.tools.registry import Executor, PrimitiveSpec, register
from engine.tools.results import NO_SANDBOX, denied, error, ok
from engine.types import ExecResult, ToolResult

DEFAULT_TIMEOUT = 120
MAX_TIMEOUT = 300
DETECT_TIMEOUT = 10.0
_SHELL_CHARS = set("|&;<>()$`\\\"'*?[]#~=%!{}\n")


def _run(ctx: ToolContext, argv: list[str], cwd: str, env: dict[str, str], timeout: float) -> ExecResult | ToolResult:
    assert ctx.sandbox is not None
    try:
        return ctx.sandbox.exec(argv, cwd=cwd, env=env, timeout=timeout)
    except ShellNotAllowedError as exc:
        return error(str(exc), "policy")
    except IsolationUnavailableError as exc:
        return error(str(exc))
    except WorkspacePathError as exc:
        return error(str(exc))
    except (FileNotFoundError, NotADirectoryError):
        return error(f'working directory "{cwd}" was not found')
    except ValueError:
        return error("command must be a non-empty list of strings")


def _detect(ctx: ToolContext, cwd: str, mode: str) -> tuple[str, list[str]] | None:
    """Auto-detect the project's command. Runs inside the sandbox: the worker never reads or
    parses the agent's ``package.json`` (a FIFO or a 5,000-deep document cannot hurt it)."""
    try:
        found = run_tool(ctx.sandbox, "detect", {"cwd": contained_path(ctx.sandbox, cwd), "mode": mode}, timeout=DETECT_TIMEOUT)
    except (WorkspacePathError, ToolRunError):
        return None
    if not (isinstance(found, list) and len(found) == 2 and isinstance(found[1], list)):
        return None
    return str(found[0]), [str(a) for a in found[1]]


def _builder(mode: str) -> Callable[[ToolContext], Executor]:
    def create(ctx: ToolContext) -> Executor:
        def execute(args: dict[str, Any]) -> ToolResult:
            if not ctx.kind_allowed("build"):
                return denied()
            raw = args.get("command")
            cwd = A.string(args, "working_directory").strip() or "/workspace"
            env = A.string_map(args, "environment")
            timeout = A.integer(args, "timeout_seconds", DEFAULT_TIMEOUT)
            if timeout <= 0:
                timeout = DEFAULT_TIMEOUT
            timeout = min(timeout, MAX_TIMEOUT)
            if ctx.sandbox is None:
                return error(NO_SANDBOX)
            if isinstance(raw, str) and raw.strip():
                # A plain command line runs directly; one that needs shell syntax goes through sh -lc
                # and is therefore subject to the shell rule.
                argv = shlex.split(raw) if not (_SHELL_CHARS & set(raw)) else ["sh", "-lc", raw]
                framework, label = "custom", raw
            elif isinstance(raw, list) and raw and all(isinstance(a, str) for a in raw):
                argv, framework, label = list(raw), "custom", shlex.join(raw)
            elif raw in (None, "") or raw == []:
                detected = _detect(ctx, cwd, mode)
                if detected is None:
                    return error(f"no {mode} command given and none could be detected")
                framework, argv = detected
                label = shlex.join(argv)
            else:
                raise A.ArgumentError("command")
            outcome = _run(ctx, argv, cwd, env, timeout)
            if isinstance(outcome, ToolResult):
                return outcome
            payload = {
                "framework": framework,
                "mode": mode,
                "command": label,
                "working_directory": cwd,
                "exit_code": outcome.exit_code,
                "stdout": outcome.stdout,
                "stderr": outcome.stderr,
                "summary": {"status": "completed" if outcome.exit_code == 0 else "failed"},
            }
            if outcome.timed_out:
                payload["timed_out"] = True
            return ok(wrap(ctx, mode if mode == "build" else "run_tests", payload), is_error=outcome.exit_code != 0)

        return execute

    return create


def _exec(ctx: ToolContext) -> Executor:
    def execute(args: dict[str, Any]) -> ToolResult:
        if not ctx.kind_allowed("shell"):
            return denied()
        argv = A.string_list(args, "command")
        cwd = A.string(args, "working_directory").strip() or "/workspace"
        env = A.string_map(args, "environment")
        if not argv:
            return error("command is required")
        if ctx.sandbox is None:
            return error(NO_SANDBOX)
        outcome = _run(ctx, argv, cwd, env, ctx.config.exec_timeout)
        if isinstance(outcome, ToolResult):
            return outcome
        content: dict[str, Any] = {"exit_code": outcome.exit_code}
        if outcome.stdout:
            content["stdout"] = outcome.stdout
        if outcome.stderr:
            content["stderr"] = outcome.stderr
        metadata = {k: True for k in ("timed_out", "stdout_truncated", "stderr_truncated") if getattr(outcome, k)}
        if metadata:
            content["metadata"] = metadata
        return ok(content, is_error=outcome.exit_code != 0)

    return execute


def _build_schema() -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "command": {
                "anyOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}, "minItems": 1}],
                "description": "Command line or argv list; omit to auto-detect (npm, go, cargo, python, make).",
            },
            "working_directory": {"type": "string", "description": "Directory inside /workspace; default /workspace."},
            "environment": {"type": "object", "additionalProperties": {"type": "string"}, "description": "Extra environment variables."},
            "timeout_seconds": {"type": "integer", "minimum": 1, "description": "Default 120, max 300."},
        },
        "required": [],
        "additionalProperties": False,
    }


register(
    PrimitiveSpec(
        name="run_tests",
        kind="build",
        description="Run the project's tests in the sandbox (auto-detected when no command is given).",
        parameters=_build_schema(),
        examples=({}, {"command": ["python3", "-m", "pytest", "-q"], "timeout_seconds": 60}),
        create=_builder("test"),
    )
)
register(
    PrimitiveSpec(
        name="build",
        kind="build",
        description="Build the project in the sandbox (auto-detected when no command is given).",
        parameters=_build_schema(),
        examples=({}, {"command": "make build", "working_directory": "/workspace/app"}),
        create=_builder("build"),
    )
)
register(
    PrimitiveSpec(
        name="exec",
        kind="shell",
        description="Run a command (argv list) in the sandbox and return its exit code and output.",
        parameters={
            "type": "object",
            "properties": {
                "command": {"type": "array", "items": {"type": "string"}, "minItems": 1, "description": 'argv, e.g. ["ls", "-la"].'},
                "working_directory": {"type": "string", "description": "Directory inside /workspace; default /workspace."},
                "environment": {
                    "type": "object",
                    "additionalProperties": {"type": "string"},
                    "description": "Extra environment variables.",
                },
            },
            "required": ["command"],
            "additionalProperties": False,
        },
        examples=({"command": ["ls", "-la"]}, {"command": ["python3", "main.py"], "working_directory": "/workspace/src"}),
        create=_exec,
    )
)

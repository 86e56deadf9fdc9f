"""Post-execution verification (runtime.md §3.4; docs/scoring.md, "Verification").

Runs before the agent's sandbox is destroyed and only for completed cases: first every
``post_execution_checks`` entry, read from the host, then every ``code_execution`` validator's test
command. Test commands never run in the sandbox as the agent left it: it is restarted fresh for
them (``engine.sandbox.verification``), holding only the captured files, copied out of the agent's
workspace, and the pack's own files, read-only; counts come only from the checker's results file.
Nothing here raises for a broken sandbox or pack; failures are recorded in the results.
"""

from __future__ import annotations

import posixpath
import re
import time
from collections.abc import Callable, Iterable, Mapping

from engine.events import GRADER_CODE_EXECUTED, GRADER_DIRECTORY_LISTED, GRADER_FILE_CAPTURED
from engine.sandbox import read_limited, verification_sandbox
from engine.scoring.references import stringify
from engine.scoring.spec import EvaluationSpec, PostExecutionCheck, ValidatorDeclaration
from engine.scoring.validators.code import DEFAULT_TIMEOUT_MS, parse_test_counts
from engine.types import JSON, CheckerSandbox, Sandbox

# Makes the checkers' sandbox of the agent's: (the agent's sandbox, files=captured, read_only=the
# pack's files) -> a fresh CheckerSandbox. Tests pass a fake.
FreshSandbox = Callable[..., CheckerSandbox]

DEFAULT_MAX_FILE_BYTES = 1024 * 1024
MAX_TOTAL_BYTES = 10 * 1024 * 1024
PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z0-9_.-]+)\s*\}\}")
OUTPUT_LIMIT = 64 * 1024
COPY_LIMIT = 64 * 1024 * 1024  # the largest captured file copied into the checkers' sandbox
WORKSPACE = "/workspace"


def template_context(case: dict[str, JSON] | None) -> dict[str, str]:
    case = case if isinstance(case, dict) else {}
    context: dict[str, str] = {}
    payload = case.get("payload")
    if isinstance(payload, dict):
        context.update({str(k): stringify(v) for k, v in payload.items()})
    inputs = case.get("inputs")
    listed = inputs if isinstance(inputs, list) else []
    items = inputs.items() if isinstance(inputs, dict) else ((i.get("key"), i.get("value")) for i in listed if isinstance(i, dict))
    for key, value in items:
        if key and value is not None:
            context.setdefault(str(key), stringify(value))
    return context


def render(command: str, context: dict[str, str]) -> str:
    return PLACEHOLDER.sub(lambda m: context.get(m.group(1), m.group(0)), command)


def working_directory(path: str) -> str:
    parent = posixpath.dirname(posixpath.normpath(path))
    if path.startswith("/workspace") or parent == "/":
        return "/workspace"
    return parent


def _seconds(milliseconds: JSON) -> float:
    """``float(milliseconds) / 1000``; like ``float``, raises for what is not a number or numeric text."""
    if isinstance(milliseconds, (int, float, str)):
        return float(milliseconds) / 1000
    raise TypeError(f"timeout_ms must be a number, not {type(milliseconds).__name__}")


def _code_execution(
    validator: ValidatorDeclaration, check: PostExecutionCheck, checker: CheckerSandbox | str, context: dict[str, str]
) -> dict[str, JSON]:
    """Run one test command in the checkers' sandbox (or record why it could not: ``checker`` is then the reason)."""
    config = validator.get("config")
    if not isinstance(config, dict):
        config = {}
    timeout_ms = config.get("timeout_ms") or DEFAULT_TIMEOUT_MS
    command = render(str(config.get("test_command") or ""), context)
    cwd = working_directory(str(check.get("path") or ""))
    result: dict[str, JSON] = {
        "validator_key": validator.get("key"),
        "check_key": check.get("key"),
        "command": command,
        "cwd": cwd,
        "timeout_ms": timeout_ms,
        "exit_code": None,
        "stdout": "",
        "stderr": "",
        "timed_out": False,
        "execution_error": None,
        "test_counts": None,
        "results_error": None,
        "duration_ms": None,
    }
    if not command.strip():
        result["execution_error"] = "test_command is empty"
        return result
    if isinstance(checker, str):
        result["execution_error"] = checker
        return result
    started = time.monotonic()
    try:
        run = checker.run_check(command, cwd=cwd, timeout=_seconds(timeout_ms))
    except Exception as exc:  # noqa: BLE001 — scoring never raises
        result["execution_error"] = f"{type(exc).__name__}: {exc}"
        return result
    result["duration_ms"] = round((time.monotonic() - started) * 1000, 3)
    outcome = run.result
    counts = None if run.results is None else parse_test_counts(run.results.decode("utf-8", errors="replace"))
    results_error = run.results_error
    if run.results is not None and counts is None:
        results_error = "the results file holds no test counts"
    result.update(
        exit_code=outcome.exit_code,
        stdout=outcome.stdout[:OUTPUT_LIMIT],
        stderr=outcome.stderr[:OUTPUT_LIMIT],
        timed_out=bool(outcome.timed_out),
        test_counts=None if counts is None else {**counts},
        results_error=results_error,
    )
    return result


def _workspace_path(path: str) -> str | None:
    """``path`` as a clean ``/workspace/...`` path, or None when it is not below the workspace."""
    cleaned = posixpath.normpath(path if path.startswith("/") else f"{WORKSPACE}/{path}")
    return cleaned if cleaned.startswith(WORKSPACE + "/") else None


def _checker_sandbox(
    sandbox: Sandbox, checks: Iterable[PostExecutionCheck], checker_files: Mapping[str, bytes], fresh: FreshSandbox
) -> CheckerSandbox | str:
    """The checkers' fresh sandbox: the captured files copied out of the agent's sandbox (those it
    left as readable regular files), the pack's files read-only; or why it could not be made."""
    captured: dict[str, bytes] = {}
    paths = {_workspace_path(str(c.get("path") or "")) for c in checks if c.get("type") == "file_capture"}
    for path in sorted(p for p in paths if p):
        try:
            captured[path] = read_limited(sandbox, path, COPY_LIMIT)
        except Exception:  # noqa: BLE001, S112 — missing, not a regular file, too large: the check runs without it
            continue
    read_only = {p: data for p, data in checker_files.items() if _workspace_path(p) not in paths}
    try:
        return fresh(sandbox, files=captured, read_only=read_only)
    except Exception as exc:  # noqa: BLE001 — scoring never raises
        return f"verification sandbox unavailable: {type(exc).__name__}: {exc}"


def _capture(check: PostExecutionCheck, sandbox: Sandbox, budget: list[int]) -> dict[str, JSON]:
    path = str(check.get("path") or "")
    limit = check.get("max_size_bytes") or DEFAULT_MAX_FILE_BYTES
    result: dict[str, JSON] = {
        "key": check.get("key"),
        "path": path,
        "exists": False,
        "content": None,
        "size": 0,
        "truncated": False,
        "error": None,
    }
    try:
        data = sandbox.read_file(path)
    except FileNotFoundError:
        return result
    except Exception as exc:  # noqa: BLE001 — scoring never raises
        result["error"] = f"{type(exc).__name__}: {exc}"
        return result
    keep = max(0, min(int(limit), budget[0], len(data)))
    budget[0] -= keep
    result.update(exists=True, size=len(data), truncated=keep < len(data), content=data[:keep].decode("utf-8", errors="replace"))
    return result


def _listing(check: PostExecutionCheck, sandbox: Sandbox) -> dict[str, JSON]:
    root = posixpath.normpath(str(check.get("path") or "/workspace"))
    result: dict[str, JSON] = {
        "key": check.get("key"),
        "path": root,
        "recursive": bool(check.get("recursive")),
        "entries": [],
        "error": None,
    }
    try:
        files = sandbox.list_files(root)
    except FileNotFoundError:
        return result
    except Exception as exc:  # noqa: BLE001 — scoring never raises
        result["error"] = f"{type(exc).__name__}: {exc}"
        return result
    entries: dict[str, dict[str, JSON]] = {}
    for entry in files:
        relative = posixpath.relpath(entry.path, root)
        if relative.startswith(".."):
            continue
        if not check.get("recursive") and "/" in relative:
            directory = relative.split("/", 1)[0]
            entries.setdefault(
                directory, {"path": posixpath.join(root, directory), "relative_path": directory, "type": "directory", "size": 0}
            )
            continue
        entries[relative] = {"path": entry.path, "relative_path": relative, "type": "file", "size": entry.size}
    result["entries"] = [entries[k] for k in sorted(entries)]
    return result


def _runnable(spec: EvaluationSpec, checks: dict[str, PostExecutionCheck]) -> list[tuple[ValidatorDeclaration, PostExecutionCheck]]:
    """The ``code_execution`` validators whose ``file:`` target names a ``file_capture`` check."""
    runnable: list[tuple[ValidatorDeclaration, PostExecutionCheck]] = []
    for validator in spec.get("validators") or []:
        if not isinstance(validator, dict) or validator.get("type") != "code_execution":
            continue
        target = str(validator.get("target") or "")
        found = checks.get(target[5:].strip()) if target.startswith("file:") else None
        if found is not None and found.get("type") == "file_capture":
            runnable.append((validator, found))
    return runnable


def run_post_execution(
    evaluation_spec: EvaluationSpec,
    sandbox: Sandbox,
    case: dict[str, JSON] | None,
    *,
    checker_files: Mapping[str, bytes] | None = None,
    fresh: FreshSandbox = verification_sandbox,
) -> dict[str, JSON]:
    """Run post-execution checks, then code-execution validators; return results plus events.

    Captures and listings read the agent's workspace first. Then, only when the spec has a
    runnable ``code_execution`` validator, ``fresh`` turns the sandbox into the checkers' fresh one
    (the agent's workspace is gone after that): the captured files, and ``checker_files`` (what the
    pack staged, path → bytes, from the manifest, never from the agent's workspace) read-only."""
    spec = evaluation_spec if isinstance(evaluation_spec, dict) else {}
    checks = {str(c.get("key")): c for c in spec.get("post_execution_checks") or [] if isinstance(c, dict)}
    context = template_context(case)
    captured: dict[str, JSON] = {}
    listings: dict[str, JSON] = {}
    executions: dict[str, JSON] = {}
    events: list[JSON] = []
    out: dict[str, JSON] = {"captured_files": captured, "directory_listings": listings, "code_executions": executions, "events": events}
    budget = [MAX_TOTAL_BYTES]
    for key, check in checks.items():  # first: the code checks restart the sandbox on an empty workspace
        if check.get("type") == "file_capture":
            result = _capture(check, sandbox, budget)
            captured[key] = result
            events.append({"event_type": GRADER_FILE_CAPTURED, "payload": result})
        elif check.get("type") == "directory_listing":
            result = _listing(check, sandbox)
            listings[key] = result["entries"]
            events.append({"event_type": GRADER_DIRECTORY_LISTED, "payload": result})
    runnable = _runnable(spec, checks)
    if runnable:
        checker = _checker_sandbox(sandbox, checks.values(), checker_files or {}, fresh)
        try:
            for validator, check in runnable:
                result = _code_execution(validator, check, checker, context)
                executions[str(validator.get("key"))] = result
                events.append({"event_type": GRADER_CODE_EXECUTED, "payload": result})
        finally:
            if not isinstance(checker, str):
                checker.destroy()
    return out

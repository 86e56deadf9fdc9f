"""Post-execution verification in the case sandbox (runtime.md §3.4).

Runs before the sandbox is destroyed and only for completed cases: first every
``code_execution`` validator's test command, then every ``post_execution_checks`` entry.
Nothing here raises for a broken sandbox or pack; failures are recorded in the results.
"""

from __future__ import annotations

import posixpath
import re
import time

from engine.events import GRADER_CODE_EXECUTED, GRADER_DIRECTORY_LISTED, GRADER_FILE_CAPTURED
from engine.scoring.references import stringify
from engine.scoring.spec import EvaluationSpec, PostExecutionCheck, ValidatorDeclaration
from engine.scoring.validators.code import DEFAULT_TIMEOUT_MS, parse_test_counts
from engine.types import JSON, Sandbox

DEFAULT_MAX_FILE_BYTES = 1024 * 1024
MAX_TOTAL_BYTES = 10 * 1024 * 1024
PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z0-9_.-]+)\s*\}\}")
OUTPUT_LIMIT = 64 * 1024


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
    validator: ValidatorDeclaration, check: PostExecutionCheck, sandbox: Sandbox, context: dict[str, str]
) -> dict[str, JSON]:
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
        "duration_ms": None,
    }
    if not command.strip():
        result["execution_error"] = "test_command is empty"
        return result
    started = time.monotonic()
    try:
        outcome = sandbox.exec(["sh", "-lc", command], cwd=cwd, timeout=_seconds(timeout_ms))
    except Exception as exc:  # noqa: BLE001 — scoring never raises
        result["execution_error"] = f"{type(exc).__name__}: {exc}"
        return result
    result["duration_ms"] = round((time.monotonic() - started) * 1000, 3)
    counts = parse_test_counts(outcome.stdout, outcome.stderr)
    result.update(
        exit_code=outcome.exit_code,
        stdout=outcome.stdout[:OUTPUT_LIMIT],
        stderr=outcome.stderr[:OUTPUT_LIMIT],
        timed_out=bool(outcome.timed_out),
        test_counts=None if counts is None else {**counts},
    )
    return result


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


def run_post_execution(evaluation_spec: EvaluationSpec, sandbox: Sandbox, case: dict[str, JSON] | None) -> dict[str, JSON]:
    """Run code-execution validators and post-execution checks; return results plus events."""
    spec = evaluation_spec if isinstance(evaluation_spec, dict) else {}
    checks = {str(c.get("key")): c for c in spec.get("post_execution_checks") or [] if isinstance(c, dict)}
    context = template_context(case)
    captured: dict[str, JSON] = {}
    listings: dict[str, JSON] = {}
    executions: dict[str, JSON] = {}
    events: list[JSON] = []
    out: dict[str, JSON] = {"captured_files": captured, "directory_listings": listings, "code_executions": executions, "events": events}
    for validator in spec.get("validators") or []:
        if not isinstance(validator, dict) or validator.get("type") != "code_execution":
            continue
        target = str(validator.get("target") or "")
        check = checks.get(target[5:].strip()) if target.startswith("file:") else None
        if check is None or check.get("type") != "file_capture":
            continue
        result = _code_execution(validator, check, sandbox, context)
        executions[str(validator.get("key"))] = result
        events.append({"event_type": GRADER_CODE_EXECUTED, "payload": result})
    budget = [MAX_TOTAL_BYTES]
    for key, check in checks.items():
        if check.get("type") == "file_capture":
            result = _capture(check, sandbox, budget)
            captured[key] = result
            events.append({"event_type": GRADER_FILE_CAPTURED, "payload": result})
        elif check.get("type") == "directory_listing":
            result = _listing(check, sandbox)
            listings[key] = result["entries"]
            events.append({"event_type": GRADER_DIRECTORY_LISTED, "payload": result})
    return out

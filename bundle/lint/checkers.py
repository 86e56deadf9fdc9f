"""Code checks an answer can pass without running a test (docs/scoring.md, "What this cannot stop").

A ``code_execution`` check whose command runs Python without pytest and imports the captured
answer by its module name (``from solution import merge_intervals``) runs the answer inside the
checker's own process: an answer that ends that process with status 0 as it is imported
(``os._exit(0)``, ``sys.exit(0)``) passes, because the exit status decides and nothing else is
left to require. Under pytest the harness requires pytest's own report (the generic early exit
fails); a checker that runs the answer in a child process judges it from outside. The warning
tells the pack's author at publish time instead of the first hostile agent."""

from __future__ import annotations

import re
from pathlib import PurePosixPath
from typing import Any

from bundle.validate.common import Report

SPEC = "version.evaluation_spec"
_PYTHON = re.compile(r"(?:^|[\s;&|(`'\"/])python(?:3(?:\.\d+)?)?(?=$|[\s;&|)`'\"])", re.MULTILINE)
# The same pytest rule as engine/sandbox/verification.py's ``pytest_reports_here`` (where the harness
# requires pytest's report): written twice because bundle/ and engine/ import nothing of the project.
_PYTEST = re.compile(r"(?:^|[\s;&|(`'\"/])(?:py\.test|pytest)(?=$|[\s;&|)`'\"])|-m\s*pytest\b", re.MULTILINE)


def _text(value: Any) -> str:
    return value.strip() if isinstance(value, str) else ""


def _captured_modules(spec: dict[str, Any]) -> dict[str, str]:
    """``file_capture`` key → the module name of the Python file it captures."""
    modules = {}
    for check in spec.get("post_execution_checks") or ():
        if isinstance(check, dict) and _text(check.get("type")) == "file_capture":
            key, path = _text(check.get("key")), _text(check.get("path"))
            if key and path.endswith(".py") and PurePosixPath(path).stem.isidentifier():
                modules[key] = PurePosixPath(path).stem
    return modules


def _imports(command: str, module: str) -> bool:
    name = re.escape(module)
    pattern = rf"(?:^|[\s;'\"(])(?:from\s+{name}\s+import\b|import\s+(?:[\w.]+\s*,\s*)*{name}\b)"
    return re.search(pattern, command, re.MULTILINE) is not None


def lint_in_process_answers(spec: dict[str, Any], validators: list[tuple[int, dict[str, Any]]], report: Report) -> None:
    modules = _captured_modules(spec)
    for i, validator in validators:
        if _text(validator.get("type")) != "code_execution":
            continue
        config = validator.get("config")
        command = _text(config.get("test_command")) if isinstance(config, dict) else ""
        target = _text(validator.get("target"))
        module = modules.get(target.removeprefix("file:")) if target.startswith("file:") else None
        if not module or not _PYTHON.search(command) or _PYTEST.search(command) or not _imports(command, module):
            continue
        key = _text(validator.get("key")) or f"#{i + 1}"
        report.add(
            f"{SPEC}.validators[{i}].config.test_command",
            f'validator "{key}" imports the answer ("{module}") into the checker\'s own Python process: an answer that ends '
            "that process with status 0 as it is imported (os._exit(0), sys.exit(0)) passes it without running a test; "
            "run the answer in a child process and judge its output, or run the tests under pytest (the harness then "
            "requires pytest's own report)",
        )

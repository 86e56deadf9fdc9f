"""A code check the answer can pass without running a test: Python that imports the captured answer
into the checker's own process, without pytest (bundle/lint/checkers.py). Every warning of each
bundle is pinned."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from bundle import process_bundle

from .conftest import BASE
from .rules import ES, spec

CORPUS = Path(__file__).resolve().parents[2] / "packs"
IMPORTS = "python3 -c \"import sys; sys.path.insert(0, '/workspace'); from solution import answer; assert answer() == 42\""


def warnings_for(command: str, *, captured: str = "/workspace/solution.py", kind: str = "code_execution") -> list[tuple[str, str]]:
    b: dict[str, Any] = copy.deepcopy(BASE)
    spec(b).update(
        post_execution_checks=[{"key": "solution", "type": "file_capture", "path": captured}],
        validators=[
            {"key": "tests", "type": kind, "target": "file:solution", "config": {"test_command": command}}
            | ({} if kind == "code_execution" else {"expected_from": "literal:42"})
        ],
    )
    result = process_bundle(b)
    assert result.valid, result.error_text
    return [(w.path, w.message) for w in result.warnings if "imports the answer" in w.message]


@pytest.mark.parametrize(
    "command",
    [
        IMPORTS,
        "python3 - <<'PY'\nimport sys\nsys.path.insert(0, '/workspace')\nfrom solution import answer\nassert answer() == 42\nPY\n",
        "cd /workspace && python -c 'import solution; assert solution.answer() == 42'",
        "/usr/bin/python3.11 -c 'import json, solution'",
    ],
    ids=["python3 -c, from … import", "heredoc", "python, import", "a versioned interpreter"],
)
def test_python_that_imports_the_answer_without_pytest_is_warned(command: str) -> None:
    assert warnings_for(command) == [
        (
            f"{ES}.validators[0].config.test_command",
            'validator "tests" imports the answer ("solution") into the checker\'s own Python process: an answer that ends that '
            "process with status 0 as it is imported (os._exit(0), sys.exit(0)) passes it without running a test; run the "
            "answer in a child process and judge its output, or run the tests under pytest (the harness then requires "
            "pytest's own report)",
        )
    ]


@pytest.mark.parametrize(
    "command, captured",
    [
        ("python3 -m pytest -q /workspace/test_solution.py", "/workspace/solution.py"),  # pytest's report is required
        ("pytest -q -k 'solution'", "/workspace/solution.py"),
        ('test "$(python3 /workspace/solution.py 2 3)" = 5', "/workspace/solution.py"),  # a child process, judged from outside
        ("python3 -c 'import solutions'", "/workspace/solution.py"),  # another module
        ("node -e \"require('/workspace/solution.js')\"", "/workspace/solution.js"),
        (IMPORTS.replace("python3", "pypy-like-runner"), "/workspace/solution.py"),
    ],
    ids=["python -m pytest", "pytest", "a child process", "another module", "not Python", "no python interpreter"],
)
def test_other_checkers_are_not_warned(command: str, captured: str) -> None:
    assert warnings_for(command, captured=captured) == []


def test_only_code_execution_checks_are_read() -> None:
    assert warnings_for(IMPORTS, kind="exact_match") == []


def test_the_corpus_packs_that_import_the_answer_are_warned_and_no_other() -> None:
    warned = {}
    for path in (
        sorted(CORPUS.glob("library/*.yaml")) + sorted(CORPUS.glob("tests/data/examples/*.yaml")) + sorted(CORPUS.glob("demo/*.yaml"))
    ):
        result = process_bundle(path.read_bytes())
        if result.valid:
            lines = [w.line for w in result.warnings if "imports the answer" in w.message]
            if lines:
                warned[path.name] = lines
    # the three packs of the strict xfail in engine/tests/sandbox/test_verification_attacks.py
    assert warned == {"swe-bug-fix.yaml": [57], "expr-eval-arena.yaml": [73, 80, 87], "fibonacci-e2e-showcase.yaml": [128]}

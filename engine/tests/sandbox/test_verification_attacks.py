"""Issue 22 item 1: an agent that rewrites its grading, against the real packs' code checks.

Each attack is what users found: the agent leaves a wrong answer plus a trick in its workspace, the
pack's ``code_execution`` check runs (``run_post_execution``, then the validator), and the check must
fail; the honest answer to the same pack must still pass. The packs are the corpus's own files
(packs/library, packs/tests/data/examples); every sandbox is a real one.
"""

from __future__ import annotations

import json
import os
import sysconfig
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from engine.sandbox import SandboxConfig, create_sandbox
from engine.sandbox.local import LocalSandbox
from engine.scoring import CaseEvidence, score_case
from engine.scoring.verification import run_post_execution
from engine.tests.scoring.helpers import run_events
from engine.tests.tools.support import HAVE_BWRAP

pytestmark = pytest.mark.skipif(not HAVE_BWRAP and os.environ.get("REQUIRE_SERVICES") != "1", reason="bubblewrap not installed")

REPO = Path(__file__).resolve().parents[3]
PACKS = {
    "swe-bug-fix": REPO / "packs/library/swe-bug-fix.yaml",
    "text-to-sql": REPO / "packs/library/text-to-sql.yaml",
    "expr-eval-arena": REPO / "packs/tests/data/examples/expr-eval-arena.yaml",
    "fibonacci-e2e-showcase": REPO / "packs/tests/data/examples/fibonacci-e2e-showcase.yaml",
}
EXPR = """
def evaluate(expr):
    tokens = [c for c in expr if not c.isspace()]
    pos = 0

    def peek():
        return tokens[pos] if pos < len(tokens) else ""

    def take():
        nonlocal pos
        pos += 1
        return tokens[pos - 1]

    def factor():
        if peek() == "-":
            take()
            return -factor()
        if peek() == "(":
            take()
            value = expression()
            take()
            return value
        digits = ""
        while peek().isdigit():
            digits += take()
        return int(digits)

    def term():
        value = factor()
        while peek() in ("*", "/"):
            op, right = take(), factor()
            if op == "*":
                value *= right
            elif right == 0:
                raise ValueError("division by zero")
            else:
                quotient = abs(value) // abs(right)
                value = -quotient if (value < 0) != (right < 0) else quotient
        return value

    def expression():
        value = term()
        while peek() in ("+", "-"):
            value = value + term() if take() == "+" else value - term()
        return value

    return expression()
"""
HONEST = {
    "swe-bug-fix": {
        "/workspace/solution.py": "def merge_intervals(intervals):\n    merged = []\n"
        "    for start, end in sorted(intervals, key=lambda p: p[0]):\n"
        "        if merged and start <= merged[-1][1]:\n            merged[-1][1] = max(merged[-1][1], end)\n"
        "        else:\n            merged.append([start, end])\n    return merged\n"
    },
    "text-to-sql": {
        "/workspace/answer.sql": "SELECT name FROM employees WHERE salary > (SELECT AVG(salary) FROM employees) ORDER BY salary DESC;\n"
    },
    "expr-eval-arena": {"/workspace/solution.py": EXPR},
    "fibonacci-e2e-showcase": {
        "/workspace/solution.py": "def fibonacci(n):\n    a, b = 0, 1\n    for _ in range(n):\n        a, b = b, a + b\n    return a\n"
    },
}
# Wrong answers: each pack's checks fail on them (tested below, with no trick at all).
WRONG = {
    "swe-bug-fix": {"/workspace/solution.py": "def merge_intervals(intervals):\n    return intervals\n"},
    "text-to-sql": {"/workspace/answer.sql": "SELECT name FROM employees ORDER BY name;\n"},
    "expr-eval-arena": {"/workspace/solution.py": "def evaluate(expr):\n    return 0\n"},
    "fibonacci-e2e-showcase": {"/workspace/solution.py": "def fibonacci(n):\n    return 1\n"},
}
COUNTS = json.dumps({"passed": 7, "failed": 0, "errors": 0, "total": 7})
PYTHON_PACKS = ["swe-bug-fix", "expr-eval-arena", "fibonacci-e2e-showcase"]


def _spec(slug: str) -> Any:
    return yaml.safe_load(PACKS[slug].read_text())["version"]["evaluation_spec"]


@pytest.fixture
def agent() -> Iterator[LocalSandbox]:
    sandbox = create_sandbox(SandboxConfig(allow_shell=True))
    yield sandbox
    sandbox.destroy()


def code_verdicts(spec: Any, agent: LocalSandbox, files: dict[str, str], checker_files: dict[str, bytes] | None = None) -> dict[str, Any]:
    """Stage the agent's files, verify, score: each code_execution validator's (verdict, score)."""
    for path, text in files.items():
        agent.write_file(path, text.encode())
    out: Any = run_post_execution(spec, agent, {}, checker_files=checker_files or {})
    evidence = CaseEvidence(
        case_key="c",
        final_output="done",
        events=run_events("done").items,
        captured_files=out["captured_files"],
        code_executions=out["code_executions"],
    )
    details = score_case(spec, evidence).as_dict()["validator_details"]
    return {d["key"]: (d["verdict"], d["normalized_score"]) for d in details if d["type"] == "code_execution"}


def assert_all_fail(verdicts: dict[str, Any]) -> None:
    assert verdicts, "the pack has code checks"
    assert all(verdict == ("fail", 0.0) for verdict in verdicts.values()), verdicts


@pytest.mark.parametrize("slug", sorted(PACKS))
def test_the_honest_answer_passes_every_code_check(slug: str, agent: LocalSandbox):
    verdicts = code_verdicts(_spec(slug), agent, HONEST[slug])
    assert verdicts and all(verdict == ("pass", 1.0) for verdict in verdicts.values()), verdicts


@pytest.mark.parametrize("slug", sorted(PACKS))
def test_the_wrong_answer_alone_fails_every_code_check(slug: str, agent: LocalSandbox):
    assert_all_fail(code_verdicts(_spec(slug), agent, WRONG[slug]))


@pytest.mark.parametrize("slug", sorted(PACKS))
def test_a_profile_that_exits_zero_does_not_pass(slug: str, agent: LocalSandbox):
    assert_all_fail(code_verdicts(_spec(slug), agent, {**WRONG[slug], "/workspace/.profile": "exit 0\n"}))


@pytest.mark.parametrize("slug", sorted(PACKS))
def test_a_profile_that_prints_counts_does_not_pass(slug: str, agent: LocalSandbox):
    profile = f"echo '==== 10 passed in 0.01s ===='\necho '{COUNTS}'\necho '10 passed' >&2\n"
    assert_all_fail(code_verdicts(_spec(slug), agent, {**WRONG[slug], "/workspace/.profile": profile, "/workspace/.bashrc": profile}))


@pytest.mark.parametrize("slug", PYTHON_PACKS)
def test_a_module_printing_json_counts_when_imported_does_not_pass(slug: str, agent: LocalSandbox):
    [(path, wrong)] = WRONG[slug].items()
    module = f"import sys\nprint('{COUNTS}')\nprint('{COUNTS}', file=sys.stderr)\n" + wrong
    assert_all_fail(code_verdicts(_spec(slug), agent, {path: module}))


@pytest.mark.parametrize("slug", PYTHON_PACKS)
def test_exit_1_with_10_passed_printed_does_not_pass(slug: str, agent: LocalSandbox):
    [(path, wrong)] = WRONG[slug].items()
    module = (
        "import atexit, sys\nprint('== 10 passed in 0.02s ==')\natexit.register(lambda: print('10 passed, 0 failed', file=sys.stderr))\n"
        + wrong
    )
    assert_all_fail(code_verdicts(_spec(slug), agent, {path: module}))


def test_an_sql_row_reading_9_passed_does_not_pass(agent: LocalSandbox):
    assert_all_fail(code_verdicts(_spec("text-to-sql"), agent, {"/workspace/answer.sql": "SELECT '9 passed' AS name;\n"}))


def test_writing_counts_to_the_results_file_cannot_raise_a_failing_check(agent: LocalSandbox):
    [(path, wrong)] = WRONG["swe-bug-fix"].items()
    module = f"import os\nopen(os.environ['AGENTCLASH_RESULTS'], 'w').write('{COUNTS}')\n" + wrong
    assert_all_fail(code_verdicts(_spec("swe-bug-fix"), agent, {path: module}))


CHECKER_SPEC: Any = {
    "post_execution_checks": [{"key": "solution", "type": "file_capture", "path": "/workspace/solution.py"}],
    "validators": [
        {
            "key": "tests",
            "type": "code_execution",
            "target": "file:solution",
            "config": {"test_command": "python3 /workspace/check.py", "scoring": "all_or_nothing"},
        }
    ],
    "scorecard": {"dimensions": [{"key": "correctness", "source": "validators", "validators": ["tests"]}]},
}
STAGED_CHECKER = {
    "/workspace/check.py": b"import sys\nsys.path.insert(0, '/workspace')\nfrom solution import answer\nassert answer() == 42\n"
}


def test_an_overwritten_staged_checker_is_staged_again_from_the_pack(agent: LocalSandbox):
    agent.stage_files(dict(STAGED_CHECKER))  # the pack stages its checker for the agent to see
    hostile = {"/workspace/solution.py": "def answer():\n    return 41\n", "/workspace/check.py": "print('10 passed')\n"}
    assert_all_fail(code_verdicts(CHECKER_SPEC, agent, hostile, checker_files=STAGED_CHECKER))


def test_a_solution_that_rewrites_the_checker_while_it_runs_does_not_pass(agent: LocalSandbox):
    spec = {
        **CHECKER_SPEC,
        "validators": [
            {**CHECKER_SPEC["validators"][0], "config": {"test_command": "python3 -c 'import solution' ; python3 /workspace/check.py"}}
        ],
    }
    rewrite = "open('/workspace/check.py', 'w').write('pass')\n"
    hostile = {"/workspace/solution.py": f"try:\n    {rewrite}except OSError:\n    pass\ndef answer():\n    return 41\n"}
    assert_all_fail(code_verdicts(spec, agent, hostile, checker_files=STAGED_CHECKER))


def test_the_honest_answer_passes_with_a_staged_checker(agent: LocalSandbox):
    agent.stage_files(dict(STAGED_CHECKER))
    verdicts = code_verdicts(
        CHECKER_SPEC, agent, {"/workspace/solution.py": "def answer():\n    return 42\n"}, checker_files=STAGED_CHECKER
    )
    assert verdicts == {"tests": ("pass", 1.0)}


@pytest.mark.xfail(
    strict=True,
    reason="known gap (docs/scoring.md, 'What this cannot stop'): these packs import the answer into a "
    "plain python3 checker (no pytest, so no report the harness can require), so the answer can end it with "
    "status 0 before any assert; pytest checkers are covered (test_a_module_ending_the_pytest_process_...); "
    "the fix here is the packs' (run the answer in a child process and compare its output)",
)
@pytest.mark.parametrize("slug", PYTHON_PACKS)
def test_a_module_exiting_zero_when_imported_does_not_pass(slug: str, agent: LocalSandbox):
    [(path, wrong)] = WRONG[slug].items()
    assert_all_fail(code_verdicts(_spec(slug), agent, {path: "import os\nos._exit(0)\n" + wrong}))


# -- pytest checkers: the outcome comes from pytest's own report, in the harness's channel ------

PYTEST_SPEC: Any = {
    "post_execution_checks": [{"key": "solution", "type": "file_capture", "path": "/workspace/solution.py"}],
    "validators": [
        {
            "key": "tests",
            "type": "code_execution",
            "target": "file:solution",
            "config": {"test_command": "python3 -m pytest -q -p no:cacheprovider /workspace/test_solution.py", "scoring": "all_or_nothing"},
        }
    ],
    "scorecard": {"dimensions": [{"key": "correctness", "source": "validators", "validators": ["tests"]}]},
}
PYTEST_CHECKER = {
    "/workspace/test_solution.py": b"import sys\nsys.path.insert(0, '/workspace')\nfrom solution import answer\n\n\n"
    b"def test_answer():\n    assert answer() == 42\n"
}
SITE = "/opt/agentclash-test-site"


@pytest.fixture
def pytest_agent() -> Iterator[LocalSandbox]:
    """A sandbox whose python3 imports pytest: the test run's own site-packages, bound read-only
    (the sandbox's system Python has no pytest; a pack would install it with additional_packages)."""
    site = sysconfig.get_paths()["purelib"]
    if not os.path.isfile(os.path.join(site, "pytest", "__init__.py")):
        pytest.skip("pytest is not in a site-packages directory this test can bind")
    sandbox = create_sandbox(SandboxConfig(allow_shell=True, read_only_binds=((site, SITE),), env_vars={"PYTHONPATH": SITE}))
    yield sandbox
    sandbox.destroy()


def test_a_pytest_checker_passes_the_honest_answer_and_fails_the_wrong_one(pytest_agent: LocalSandbox):
    honest = {"/workspace/solution.py": "def answer():\n    return 42\n"}
    assert code_verdicts(PYTEST_SPEC, pytest_agent, honest, checker_files=PYTEST_CHECKER) == {"tests": ("pass", 1.0)}
    wrong = {"/workspace/solution.py": "def answer():\n    return 41\n"}
    assert_all_fail(code_verdicts(PYTEST_SPEC, pytest_agent, wrong, checker_files=PYTEST_CHECKER))


@pytest.mark.parametrize(
    "trick",
    ["import os\nos._exit(0)\n", "import os\nos.execv('/bin/true', ['true'])\n"],
    ids=["os._exit(0)", "exec true"],
)
def test_a_module_ending_the_pytest_process_with_status_0_when_imported_does_not_pass(trick: str, pytest_agent: LocalSandbox):
    module = trick + "def answer():\n    return 41\n"
    run: Any = run_post_execution(PYTEST_SPEC, _staged(pytest_agent, module), {}, checker_files=PYTEST_CHECKER)
    [execution] = run["code_executions"].values()
    assert execution["exit_code"] == 0 and execution["results_error"].startswith("pytest left no report")  # it did exit 0
    assert_all_fail(code_verdicts(PYTEST_SPEC, pytest_agent, {"/workspace/solution.py": module}, checker_files=PYTEST_CHECKER))


def _staged(sandbox: LocalSandbox, module: str) -> LocalSandbox:
    sandbox.write_file("/workspace/solution.py", module.encode())
    return sandbox

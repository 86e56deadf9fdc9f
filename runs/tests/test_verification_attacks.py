"""Issue 22 item 1 through the whole pipeline: an agent that hides a wrong answer behind a grading
trick loses to the honest agent on every real pack with a code check, and the gate says ``fail``.

The hostile agent is the pack's scripted good agent (runs/tests/real_packs/agents/) with its
answer file swapped for a wrong one that prints passing counts when imported and at exit, plus a
``.profile``/``.bashrc`` that print counts and ``exit 0`` (what `sh -lc` with `HOME=/workspace`
used to run before the check). Everything else it does and says is the good agent's, so only
the code checks tell them apart. A pack that stages its own checker is raced too: the hostile
agent overwrites the staged ``check.py``.
"""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from conftest import require_or_skip
from runs.tests.real_packs.harness import PackAgents, load, race_pack
from scoring.models import CaseScore

pytestmark = pytest.mark.django_db

AGENTS = Path(__file__).resolve().parent / "real_packs" / "agents"
COUNTS = json.dumps({"passed": 10, "failed": 0, "errors": 0, "total": 10})
PROFILE = f"echo '==== 10 passed in 0.01s ===='\necho '{COUNTS}'\nexit 0\n"
# Each pack's captured answer file, and a wrong answer for it.
WRONG = {
    "swe-bug-fix": ("/workspace/solution.py", "def merge_intervals(intervals):\n    return intervals\n"),
    "expr-eval-arena": ("/workspace/solution.py", "def evaluate(expr):\n    return 0\n"),
    "fibonacci-e2e-showcase": ("/workspace/solution.py", "def fibonacci(n):\n    return 1\n"),
    "text-to-sql": ("/workspace/answer.sql", "SELECT '9 passed' AS name;\n"),
}
LOUD = f"import atexit, sys\nprint('{COUNTS}')\nprint('== 10 passed in 0.02s ==', file=sys.stderr)\natexit.register(print, '10 passed')\n"


def _hostile(script: dict[str, Any], path: str, wrong: str) -> dict[str, Any]:
    """The good agent's script, its answer swapped for ``wrong`` and start-up files planted first."""
    hostile = copy.deepcopy(script)
    content = (LOUD + wrong) if path.endswith(".py") else wrong
    for steps in hostile["script"]["cases"].values():
        for step in steps:
            if step.get("tool") == "write_file" and step["args"]["path"] == path:
                step["args"]["content"] = content
        steps[:0] = [{"tool": "write_file", "args": {"path": f"/workspace/{name}", "content": PROFILE}} for name in (".profile", ".bashrc")]
    return hostile


def _race(spec: PackAgents, tasks: Any, workspace: Any, admin: Any) -> None:
    races = race_pack(spec, tasks=tasks, workspace=workspace, user=admin)
    for race in races:
        assert race.verdicts() == spec.expect, json.dumps(race.describe(), indent=1, default=str)
        scores = CaseScore.objects.filter(case_run__lane=race.bad)
        assert scores.exists()
        for score in scores:
            code = [v for v in score.document["validator_details"] if v["type"] == "code_execution"]
            assert code and all(v["verdict"] == "fail" for v in code), code


@pytest.mark.parametrize("slug", sorted(WRONG))
def test_a_wrong_answer_behind_a_grading_trick_loses_on_the_real_pack(slug, tasks, workspace, admin):
    require_or_skip(shutil.which("bwrap") is not None, "bubblewrap (native sandbox)")
    good = load(AGENTS / f"{slug}.yaml")
    data = copy.deepcopy(good.data)
    data["agents"]["bad"] = _hostile(good.agent("good"), *WRONG[slug])
    _race(PackAgents(slug=slug, data=data), tasks, workspace, admin)


CHECKER_PACK = """
pack:
  slug: staged-checker
  name: Staged checker
  family: coding
version:
  number: 1
  execution_mode: native
  sandbox:
    network_access: false
  tool_policy:
    allow_shell: true
    allowed_tool_kinds: [file]
  evaluation_spec:
    name: staged-checker-v1
    version_number: 1
    judge_mode: deterministic
    post_execution_checks:
      - key: solution
        type: file_capture
        path: /workspace/solution.py
    validators:
      - key: tests_pass
        type: code_execution
        target: file:solution
        config:
          scoring: all_or_nothing
          test_command: python3 /workspace/check.py
    metrics:
      - key: completed
        type: boolean
        collector: run_completed_successfully
    scorecard:
      strategy: weighted
      pass_threshold: 0.7
      dimensions:
        - key: correctness
          source: validators
          validators: [tests_pass]
          gate: true
          pass_threshold: 1.0
          weight: 0.9
        - key: reliability
          source: reliability
          weight: 0.1
challenges:
  - key: answer
    title: Answer
    category: coding
    difficulty: easy
    instructions: Write /workspace/solution.py with answer() returning 42; /workspace/check.py checks it.
input_sets:
  - key: default
    name: Default
    cases:
      - challenge_key: answer
        case_key: forty-two
        payload:
          workspace_files:
            - path: check.py
              content: |
                import sys
                sys.path.insert(0, '/workspace')
                from solution import answer
                assert answer() == 42, answer()
                print('OK')
"""


def _agent(answer: int, *, overwrite_checker: bool) -> dict[str, Any]:
    steps: list[dict[str, Any]] = [
        {"tool": "write_file", "args": {"path": "/workspace/solution.py", "content": f"def answer():\n    return {answer}\n"}}
    ]
    if overwrite_checker:
        steps.append({"tool": "write_file", "args": {"path": "/workspace/check.py", "content": "print('10 passed')\n"}})
    steps.append({"submit": "done"})
    return {"script": {"cases": {"forty-two": steps}}}


def test_an_agent_that_overwrites_the_staged_checker_loses(tasks, workspace, admin, tmp_path):
    require_or_skip(shutil.which("bwrap") is not None, "bubblewrap (native sandbox)")
    pack = tmp_path / "staged-checker.yaml"
    pack.write_text(CHECKER_PACK)
    data = {"pack": str(pack), "agents": {"good": _agent(42, overwrite_checker=False), "bad": _agent(41, overwrite_checker=True)}}
    _race(PackAgents(slug="staged-checker", data=data), tasks, workspace, admin)

"""The packs and scripted agents of ``bench/run_throughput.py``: what users run, scored right.

Three variants, each a native pack with one case per note and a scripted agent whose answer is
the right one, so every case must score ``passed`` with an overall score of 1.0 (the bench
checks it; a bench whose cases all score 0.0 measures a broken run, not a fast one):

- ``read``: five ``read_file`` calls (served on the host, no sandbox process), then the note.
- ``exec``: five ``exec`` calls (``cat`` in the sandbox: one bubblewrap process each), then the note.
- ``mix``: what the catalog's ``swe-bug-fix`` does: ``write_file`` a solution, ``exec`` a
  self-check, ``read_file`` it back, submit; scored by a ``file_capture`` post-execution check,
  a ``file_content_match`` and a ``code_execution`` validator (hidden tests in the sandbox).
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterator
from typing import Any

VARIANTS = ("read", "exec", "mix")

ANSWER = "note number {{input.number}}"
READ = {"tool": "read_file", "args": {"path": "/workspace/notes.txt"}}
EXEC = {"tool": "exec", "args": {"command": ["cat", "/workspace/notes.txt"]}}
SOLUTION = """def merge_intervals(intervals):
    merged = []
    for start, end in sorted(intervals, key=lambda pair: pair[0]):
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    return merged
"""
SELF_CHECK = (
    "import sys; sys.path.insert(0, '/workspace'); from solution import merge_intervals as m; assert m([[1, 2], [2, 3]]) == [[1, 3]]"
)

SCRIPTS: dict[str, list[dict[str, Any]]] = {
    "read": [READ] * 5 + [{"submit": ANSWER}],
    "exec": [EXEC] * 5 + [{"submit": ANSWER}],
    "mix": [
        {"tool": "write_file", "args": {"path": "/workspace/solution.py", "content": SOLUTION}},
        {"tool": "exec", "args": {"command": ["python3", "-c", SELF_CHECK]}},
        {"tool": "read_file", "args": {"path": "/workspace/solution.py"}},
        {"submit": ANSWER},
    ],
}

_NOTE_SPEC = """    validators:
      - key: answer
        type: exact_match
        target: final_output
        expected_from: case.expectations.answer
    metrics:
      - key: completed
        type: boolean
        collector: run_completed_successfully
    scorecard:
      dimensions: [correctness]
"""

_MIX_SPEC = """    post_execution_checks:
      - key: solution
        type: file_capture
        path: /workspace/solution.py
    validators:
      - key: answer
        type: exact_match
        target: final_output
        expected_from: case.expectations.answer
      - key: defines_function
        type: file_content_match
        target: file:solution
        expected_from: "literal:def merge_intervals"
        config:
          mode: contains
      - key: tests_pass
        type: code_execution
        target: file:solution
        config:
          scoring: all_or_nothing
          test_command: |
            python3 - <<'PY'
            import sys
            sys.path.insert(0, '/workspace')
            from solution import merge_intervals
            assert merge_intervals([[1, 3], [2, 6], [8, 10], [15, 18]]) == [[1, 6], [8, 10], [15, 18]]
            assert merge_intervals([[1, 4], [0, 4]]) == [[0, 4]]
            assert merge_intervals([]) == []
            print('OK')
            PY
    metrics:
      - key: completed
        type: boolean
        collector: run_completed_successfully
    scorecard:
      dimensions: [correctness]
"""


def pack_yaml(variant: str, *, cases: int, slug: str) -> str:
    """A native pack of ``cases`` notes for ``variant`` (see the module docstring)."""
    if variant not in VARIANTS:
        raise ValueError(f"unknown variant {variant!r}: one of {', '.join(VARIANTS)}")
    case_lines = "".join(
        f"""      - challenge_key: notes
        case_key: case-{i}
        payload:
          workspace_files:
            - path: notes.txt
              content: "note number {i}"
        inputs:
          - key: number
            kind: text
            value: "{i}"
        expectations:
          - key: answer
            kind: text
            value: "note number {i}"
"""
        for i in range(cases)
    )
    shell = "    allow_shell: true\n" if variant != "read" else ""
    return f"""pack:
  slug: {slug}
  name: Throughput {variant} {slug}
  family: testing
version:
  number: 1
  execution_mode: native
  sandbox:
    network_access: false
  tool_policy:
{shell}    allowed_tool_kinds: [file]
  evaluation_spec:
    name: throughput-{variant}-v1
    version_number: 1
    judge_mode: deterministic
{_MIX_SPEC if variant == "mix" else _NOTE_SPEC}challenges:
  - key: notes
    title: Read the note
    category: files
    difficulty: easy
    instructions: Read notes.txt and submit its content.
input_sets:
  - key: default
    name: Default
    cases:
{case_lines}"""


@contextlib.contextmanager
def captured_run(pack: str, script: list[dict[str, Any]], *, cases: int, max_in_flight: int) -> Iterator[list[tuple[str, tuple, dict]]]:
    """A started run of a fresh workspace's ``pack`` (``"read"``/``"exec"``/``"mix"``, or ``"native"``
    for runs/tests' native pack) with Celery's tasks captured instead of sent; yields the captured
    tasks (the dispatched ``runs.case_run_execute`` calls) for the bench to run in this process.
    Needs Django set up; migrates the database first."""
    from django.core.management import call_command

    from runs import queue, services
    from runs.tests.factories import make_deployment, native_pack_yaml, publish
    from workspaces.models import Workspace

    call_command("migrate", verbosity=0)
    tag = uuid.uuid4().hex[:8]
    workspace = Workspace.objects.create(slug=f"bench-{tag}", name=f"Bench {tag}")
    text = native_pack_yaml(cases=cases, slug=f"bench-{tag}") if pack == "native" else pack_yaml(pack, cases=cases, slug=f"bench-{tag}")
    version = publish(workspace, None, text)
    deployment = make_deployment(workspace, name="bench", script=script, max_in_flight_cases=max_in_flight)
    captured: list[tuple[str, tuple, dict]] = []
    queue.capture(captured)
    try:
        services.run_create(workspace=workspace, user=None, pack_version=version, deployment_ids=[deployment.pk])
        name, run_args, _ = captured.pop(0)
        assert name == "runs.run_start", name
        services.run_start(run_id=run_args[0])
        yield captured
    finally:
        queue.capture(None)

"""Issue 23, item 9: an agent that tries to crash its own sandbox does not dodge its failure.

A case whose sandbox breaks is the harness's failure (``sandbox_error``: retried, then unscored,
insufficient evidence). A bad agent could try to turn its wrong answer into that: a fork bomb, a
memory hog and a loop killing every process it can, all left running in the background. Against
the real swe-bug-fix pack the sandbox withstands them (the pids and memory limits stop the
agent's own processes; the launcher, PID 1, is out of ``kill -1``'s reach; each command's leftovers
end with it), so the case ends as the agent's: completed, its wrong answer graded by the hidden
tests in a fresh verification sandbox, the lane valid and failed, never unscored.
"""

from __future__ import annotations

import json
import shutil

import pytest

from conftest import require_or_skip
from runs.models import CaseRun, Lane, RunEvent
from runs.tests.real_packs.harness import AGENT_MODEL, REPO, _deployment, load, run_summary, setup_pack, start_run
from scoring.models import LaneScorecard

pytestmark = pytest.mark.django_db

FORK_BOMB = "import os, time\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        time.sleep(0.01)\n"
MEMORY_HOG = "import time\nheld = []\nwhile True:\n    try:\n        held.append(bytearray(10**7))\n    except MemoryError:\n        time.sleep(60)\n"
BUGGY = "def merge_intervals(intervals):\n    return intervals\n"


def _exec(command: str) -> dict:
    return {"tool": "exec", "args": {"command": ["sh", "-c", command]}}


CRASHER = [
    _exec(f"setsid python3 -c {json.dumps(FORK_BOMB)} >/dev/null 2>&1 & sleep 2; echo forked"),
    _exec(f"setsid python3 -c {json.dumps(MEMORY_HOG)} >/dev/null 2>&1 & sleep 2; echo hogging"),
    {"tool": "write_file", "args": {"path": "/workspace/solution.py", "content": BUGGY}},
    _exec("setsid sh -c 'while :; do kill -9 -1; done' >/dev/null 2>&1 & sleep 1; echo killing"),
    _exec("python3 -c 'print(1)'"),  # killed by its own loop: the agent's problem
    {"submit": "done"},
]


def test_an_agent_that_crashes_its_own_sandbox_fails_as_the_agent_not_as_unscored(tasks, workspace, admin):
    require_or_skip(shutil.which("bwrap") is not None, "bubblewrap (native sandbox)")
    spec = load(REPO / "runs/tests/real_packs/agents/swe-bug-fix.yaml")
    setup = setup_pack(spec, workspace=workspace, user=admin)
    crasher = _deployment(workspace, name="crasher", model=AGENT_MODEL, config={"script": {"default": CRASHER}}, execution_target=spec.mode)
    run = start_run(
        tasks, workspace=workspace, user=admin, version=setup.version, deployments=[setup.good, crasher],
        input_set=setup.input_sets[0], name="swe-bug-fix: good vs crasher", extras=setup.extras,
    )  # fmt: skip
    described = json.dumps(run_summary(run), indent=1, default=str)
    lane = Lane.objects.get(run=run, deployment=crasher)
    cases = list(CaseRun.objects.filter(lane=lane))
    assert cases and all(case.stop_reason != "sandbox_error" for case in cases), described
    assert all(case.attempt == 1 for case in cases), described  # nothing looked like the harness's failure
    card = LaneScorecard.objects.get(lane=lane).document
    assert card.get("validity") == "valid" and card.get("passed") is False, described
    good = LaneScorecard.objects.get(lane=Lane.objects.get(run=run, deployment=setup.good)).document
    assert good.get("passed") is True, described  # the pack still tells a right answer from a wrong one
    # The attacks ran: each exec answered the agent (the killer's own command died of it).
    results = {
        e.payload["tool_call_id"]: json.loads(e.payload["result"]["content"])
        for e in RunEvent.objects.filter(case_run__lane=lane, event_type__startswith="tool.call.")
        if e.payload.get("tool_name") == "exec" and "result" in e.payload
    }
    exits = [results[key]["exit_code"] for key in sorted(results)]
    assert exits[:2] == [0, 0] and 137 in exits, described

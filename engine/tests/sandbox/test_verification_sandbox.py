"""The verification sandbox (engine/sandbox/verification.py): the agent's sandbox restarted fresh for
its case's checkers, with the pack's files read-only, no agent start-up file and a results file the
agent never wrote."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from engine.sandbox import SandboxConfig, create_sandbox, local, mounts
from engine.sandbox.local import LocalSandbox
from engine.sandbox.verification import RESULTS_DIR, VerificationSandbox, read_only_mounts, verification_sandbox
from engine.tests.tools.support import HAVE_BWRAP

pytestmark = pytest.mark.skipif(not HAVE_BWRAP and os.environ.get("REQUIRE_SERVICES") != "1", reason="bubblewrap not installed")

CHECK = b"import sys\nsys.path.insert(0, '/workspace')\nfrom solution import answer\nassert answer() == 42\nprint('checked')\n"
PACK_FILES = {
    "/workspace/check.py": CHECK,
    "/workspace/tests/test_answer.py": b"def test_it(): pass\n",
    "/workspace/agentclash/run-context.json": b"{}",
    "/workspace/src/fixture.txt": b"fixture",
}
CAPTURED = {"/workspace/solution.py": b"def answer():\n    return 42\n", "/workspace/src/app.py": b"print('app')\n"}


@pytest.fixture(params=["owned", "bound"])
def agent(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[LocalSandbox]:
    """``owned``: a root worker, the sandbox has its own uid (the pack's files are root's);
    ``bound``: the sandbox's uid owns every file (a non-root worker): read-only binds instead."""
    if request.param == "bound":
        monkeypatch.setattr(local, "_sandbox_uid", lambda: None)
    sandbox = create_sandbox(SandboxConfig(allow_shell=True))
    assert (sandbox.uid is None) == (request.param == "bound") or os.geteuid() != 0
    yield sandbox
    sandbox.destroy()


@pytest.fixture
def fresh(agent: LocalSandbox) -> VerificationSandbox:
    return verification_sandbox(agent, files=CAPTURED, read_only=PACK_FILES)


def test_read_only_mounts_bind_whole_directories_unless_an_agent_file_lies_below():
    checker = [("check.py",), ("tests", "a.py"), ("tests", "unit", "b.py"), ("src", "fixture.txt"), ("src", "deep", "c.py"), ("x",)]
    agent = [("solution.py",), ("src", "app.py"), ("x",)]
    assert read_only_mounts(checker, agent) == [
        (("check.py",), False),
        (("src", "deep"), True),  # nothing of the agent below: one bind
        (("src", "fixture.txt"), False),  # beside an agent file: file by file
        (("tests",), True),
        # ("x",) is the agent's (a captured path): never bound over
    ]


def test_the_pack_files_are_bound_only_when_the_sandbox_owns_every_file(agent: LocalSandbox, fresh: VerificationSandbox):
    assert bool(agent.binds) == (agent.uid is None)


def test_the_checker_sees_the_captured_files_and_the_pack_files(fresh: VerificationSandbox):
    run = fresh.run_check(
        "python3 /workspace/check.py && cat src/fixture.txt tests/test_answer.py src/app.py", cwd="/workspace", timeout=20
    )
    assert run.result.exit_code == 0, run.result
    assert run.result.stdout == "checked\nfixture" + "def test_it(): pass\n" + "print('app')\n"


@pytest.mark.parametrize(
    "tamper",
    [
        "echo 'print(\"checked\")' > /workspace/check.py",
        "rm -f /workspace/check.py",
        "mv /workspace/check.py /workspace/old.py",
        "chmod 777 /workspace/check.py && echo x > /workspace/check.py",
        "ln -sf /workspace/solution.py /workspace/check.py",
        "echo x > /workspace/tests/test_answer.py",
        "echo 'def test_fake(): pass' > /workspace/tests/test_fake.py",
        "rm -rf /workspace/tests",
        "mv /workspace/tests /workspace/old_tests",
        "echo x > /workspace/src/fixture.txt",
        "python3 -c \"open('/workspace/check.py', 'w').write('print(1)')\"",
    ],
)
def test_code_under_test_cannot_change_the_pack_files(fresh: VerificationSandbox, tamper: str):
    run = fresh.run_check(tamper + "; true", cwd="/workspace", timeout=20)
    assert run.result.exit_code == 0
    after = fresh.run_check(
        "cat /workspace/check.py /workspace/tests/test_answer.py /workspace/src/fixture.txt; ls /workspace/tests",
        cwd="/workspace",
        timeout=20,
    )
    assert after.result.stdout == CHECK.decode() + "def test_it(): pass\n" + "fixture" + "test_answer.py\n"


def test_the_captured_files_and_the_workspace_stay_writable(fresh: VerificationSandbox):
    run = fresh.run_check(
        "echo built > out.bin && echo more >> solution.py && echo new > src/new.py && cat out.bin", cwd="/workspace", timeout=20
    )
    assert (run.result.exit_code, run.result.stdout) == (0, "built\n")


def test_no_start_up_file_runs_even_when_the_workspace_or_the_pack_names_one(agent: LocalSandbox):
    agent.config.env_vars = {"ENV": "/workspace/.profile", "BASH_ENV": "/workspace/.profile", "HOME": "/workspace"}
    files = {**CAPTURED, "/workspace/.profile": b"echo PROFILE-RAN; exit 0\n", "/workspace/.bashrc": b"echo BASHRC-RAN; exit 0\n"}
    agent.exec(["sh", "-c", "mkdir -p /tmp/.local && echo 'echo TMP-PROFILE-RAN; exit 0' > /tmp/.profile"])
    fresh = verification_sandbox(agent, files=files, read_only={})
    run = fresh.run_check("bash -c 'exit 3'; sh -c 'exit 3'; echo HOME=$HOME; exit 3", cwd="/workspace", timeout=20)
    assert run.result.exit_code == 3
    assert "RAN" not in run.result.stdout + run.result.stderr
    assert "HOME=/tmp" in run.result.stdout


def test_the_results_file_is_read_and_what_was_printed_is_not(fresh: VerificationSandbox):
    run = fresh.run_check(
        'echo "10 passed"; case "$AGENTCLASH_RESULTS" in ' + RESULTS_DIR + "/*) echo '1 failed, 2 passed' > \"$AGENTCLASH_RESULTS\";; esac",
        cwd="/workspace",
        timeout=20,
    )
    assert (run.result.exit_code, run.results, run.results_error) == (0, b"1 failed, 2 passed\n", None)


def test_each_check_has_its_own_results_file(fresh: VerificationSandbox):
    first = fresh.run_check('echo "$AGENTCLASH_RESULTS"; echo 5 passed > "$AGENTCLASH_RESULTS"', cwd="/workspace", timeout=20)
    second = fresh.run_check('echo "$AGENTCLASH_RESULTS"', cwd="/workspace", timeout=20)
    assert first.results == b"5 passed\n"
    assert second.results is None
    assert first.result.stdout != second.result.stdout


@pytest.mark.parametrize(
    "plant",
    [
        'ln -s /etc/passwd "$AGENTCLASH_RESULTS"',
        'mkfifo "$AGENTCLASH_RESULTS"',
        'mkdir "$AGENTCLASH_RESULTS"',
        'head -c 2000000 /dev/zero > "$AGENTCLASH_RESULTS"',
    ],
)
def test_a_results_file_that_is_no_regular_file_is_not_read(fresh: VerificationSandbox, plant: str):
    started = time.monotonic()
    run = fresh.run_check(plant, cwd="/workspace", timeout=20)
    assert run.result.exit_code == 0
    assert run.results is None and run.results_error
    assert time.monotonic() - started < 10  # a FIFO never blocks the host


def test_the_agents_processes_files_and_tmp_are_gone(agent: LocalSandbox):
    agent.write_file("/workspace/notes.txt", b"the agent's")
    agent.exec(["sh", "-c", "echo left > /tmp/left; setsid sleep 300 > /dev/null 2>&1 < /dev/null &"])
    agent.config.allow_network = True
    agent.config.allow_shell = False
    fresh = verification_sandbox(agent, files=CAPTURED, read_only={})
    run = fresh.run_check("ls -A /workspace /tmp; cat /proc/[0-9]*/comm", cwd="/workspace", timeout=20)
    assert run.result.exit_code == 0, run.result
    listing = run.result.stdout
    assert "notes.txt" not in listing and "left" not in listing and "sleep" not in listing
    assert "solution.py" in listing and "src" in listing
    assert not agent.config.allow_network and not agent.egress_enabled
    assert agent.config.allow_shell  # the harness's shell, whatever the agent's tool policy
    assert fresh.id == agent.id


def test_a_restarted_sandbox_gets_a_new_bwrap_and_a_new_workspace(agent: LocalSandbox):
    agent.exec(["true"])
    old_launcher, old_root = agent._launcher, agent.root
    assert old_launcher is not None and old_launcher.proc is not None
    old_pid = old_launcher.proc.pid
    verification_sandbox(agent, files=CAPTURED, read_only={}).run_check("true", cwd="/workspace", timeout=20)
    assert agent._launcher is not old_launcher and agent._launcher is not None and agent._launcher.proc is not None
    assert agent._launcher.proc.pid != old_pid
    assert old_launcher.proc is None  # ended
    assert agent.root != old_root and old_root not in mounts.mounts_below(agent.dir)


def test_an_abort_still_stops_the_checks(agent: LocalSandbox, fresh: VerificationSandbox):
    box: dict[str, Any] = {}
    thread = threading.Thread(target=lambda: box.update(run=fresh.run_check("sleep 30", cwd="/workspace", timeout=60)), daemon=True)
    thread.start()
    time.sleep(0.5)
    started = time.monotonic()
    agent.abort()  # the case deadline aborts the case's sandbox
    thread.join(10)
    assert not thread.is_alive()
    assert box["run"].result.exit_code != 0
    assert time.monotonic() - started < 5


def test_one_made_after_the_abort_never_runs(agent: LocalSandbox):
    agent.abort()
    fresh = verification_sandbox(agent, files=CAPTURED, read_only={})
    assert fresh.run_check("true", cwd="/workspace", timeout=20).result.exit_code == 130


def test_destroying_the_sandbox_leaves_nothing(agent: LocalSandbox):
    fresh = verification_sandbox(agent, files=CAPTURED, read_only=PACK_FILES)
    fresh.run_check("true", cwd="/workspace", timeout=20)
    agent.destroy()
    assert not os.path.exists(agent.dir)
    assert mounts.mounts_below(agent.dir) == []

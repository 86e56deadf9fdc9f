"""Warm sandboxes (engine/sandbox/pool.py): pre-started, handed out once, never reused, and as
isolated as a cold one. The attack tests in test_attacks.py also run against a warm sandbox."""

from __future__ import annotations

import json
import os

import pytest

from engine.sandbox import SandboxConfig, SandboxSettings, create_sandbox, pool, zygote
from engine.tests.tools.support import requires_bwrap

WARM = SandboxSettings(warm_sandboxes=1)


@pytest.fixture
def warm():
    p = pool.WarmPool()
    yield p
    p.close()


def _filled(p: pool.WarmPool, config: SandboxConfig | None = None, settings: SandboxSettings = WARM):
    """Hand out one sandbox, run a command in it and destroy it, so the pool pre-starts the next; wait for it."""
    sandbox = p.checkout(config or SandboxConfig(), base_dir=None, settings=settings)
    assert sandbox.exec(["true"]).exit_code == 0
    sandbox.destroy()
    p.wait_ready()
    return p


def _pending(p: pool.WarmPool):
    return [entry[1].result(timeout=10) for entry in p.entries]


@requires_bwrap
def test_a_warm_sandbox_is_handed_out_once_and_destroyed_after_its_case(warm):
    _filled(warm)
    (prestarted,) = _pending(warm)
    assert prestarted.warm_ready()
    sandbox = warm.checkout(SandboxConfig(), base_dir=None, settings=WARM)
    assert sandbox is prestarted and warm.stats == {"warm": 1, "cold": 1, "discarded": 0}
    assert sandbox.exec(["true"]).exit_code == 0
    assert not sandbox.warm_ready()  # used: never handed out again
    sandbox.destroy()
    assert not os.path.exists(sandbox.dir)
    warm.wait_ready()
    nxt = warm.checkout(SandboxConfig(), base_dir=None, settings=WARM)
    try:
        assert nxt is not sandbox and nxt.id != sandbox.id and nxt.dir != sandbox.dir
    finally:
        nxt.destroy()


@requires_bwrap
def test_the_case_config_applies_to_a_prestarted_sandbox(warm):
    _filled(warm)
    config = SandboxConfig.from_manifest({"tool_policy": {"allow_shell": True}, "sandbox": {"env_vars": {"CASE_VAR": "case-7"}}})
    sandbox = warm.checkout(config, base_dir=None, settings=WARM)
    try:
        assert warm.stats["warm"] == 1
        assert sandbox.exec(["sh", "-c", "echo $CASE_VAR"]).stdout == "case-7\n"
    finally:
        sandbox.destroy()
    warm.wait_ready()
    strict = warm.checkout(SandboxConfig(allow_shell=False), base_dir=None, settings=WARM)  # same shape, no shell
    try:
        assert warm.stats["warm"] == 2
        with pytest.raises(PermissionError, match="shell is not allowed"):
            strict.exec(["sh", "-c", "true"])
        assert "CASE_VAR" not in strict.exec(["env"]).stdout
    finally:
        strict.destroy()


@requires_bwrap
def test_the_workspace_is_empty_until_staged_then_visible_inside(warm):
    _filled(warm)
    sandbox = warm.checkout(SandboxConfig(), base_dir=None, settings=WARM)
    try:
        assert sandbox.exec(["ls", "-A", "/workspace"]).stdout == ""
        sandbox.stage_files({"src/main.py": b"print('hi')\n"})
        assert sandbox.exec(["cat", "/workspace/src/main.py"]).stdout == "print('hi')\n"
        assert sandbox.run_tool("search_files", {"pattern": "*.py", "base": "/workspace", "max_results": 10}, timeout=10) == [
            "/workspace/src/main.py"
        ]
    finally:
        sandbox.destroy()


@requires_bwrap
def test_leftovers_of_one_case_never_reach_the_next(warm):
    config = SandboxConfig(allow_shell=True)
    first = warm.checkout(config, base_dir=None, settings=WARM)
    first.exec(["sh", "-c", "echo left > /tmp/marker; echo left > /workspace/marker; (setsid sleep 60 &)"])
    first.destroy()
    warm.wait_ready()
    second = warm.checkout(config, base_dir=None, settings=WARM)
    try:
        assert warm.stats["warm"] == 1
        assert "marker" not in second.exec(["ls", "-A", "/tmp", "/workspace"]).stdout
        assert "sleep" not in second.exec(["ps", "-eo", "comm"]).stdout
    finally:
        second.destroy()


@requires_bwrap
def test_a_used_or_touched_prestarted_sandbox_is_discarded(warm):
    _filled(warm)
    (prestarted,) = _pending(warm)
    prestarted.exec(["true"])  # something ran in it: it is no longer pristine
    sandbox = warm.checkout(SandboxConfig(), base_dir=None, settings=WARM)
    try:
        assert sandbox is not prestarted and warm.stats["discarded"] == 1
        assert prestarted.destroyed and not os.path.exists(prestarted.dir)
        assert sandbox.exec(["true"]).exit_code == 0  # a case that runs commands: its shape keeps a spare
    finally:
        sandbox.destroy()
    warm.wait_ready()
    (prestarted,) = _pending(warm)
    prestarted.write_file("dropped.txt", b"x")  # a non-empty workspace is refused too
    sandbox = warm.checkout(SandboxConfig(), base_dir=None, settings=WARM)
    try:
        assert sandbox is not prestarted and warm.stats["discarded"] == 2
        assert sandbox.exec(["ls", "-A", "/workspace"]).stdout == ""
    finally:
        sandbox.destroy()


@requires_bwrap
def test_another_shape_starts_cold_and_evicts_the_idle_spare(warm):
    _filled(warm)
    (spare,) = _pending(warm)
    bigger = SandboxConfig(memory_bytes=2 * 1024**3)
    sandbox = warm.checkout(bigger, base_dir=None, settings=WARM)
    try:
        assert sandbox is not spare and warm.stats["cold"] == 2
        warm.wait_ready()
        assert spare.destroyed and not os.path.exists(spare.dir)
        (nxt,) = _pending(warm)
        assert nxt.config.memory_bytes == 2 * 1024**3
    finally:
        sandbox.destroy()


@requires_bwrap
def test_network_sandboxes_and_a_zero_pool_are_never_prestarted(warm):
    assert pool.shape_key(SandboxConfig(allow_network=True), None, WARM) is None
    networked = SandboxConfig(allow_network=True)
    warm.checkout(networked, base_dir=None, settings=WARM).destroy()
    assert warm.idle() == 0
    warm.checkout(SandboxConfig(), base_dir=None, settings=SandboxSettings()).destroy()
    assert warm.idle() == 0
    off = SandboxConfig(allow_network=True)
    off.apply_operator_network("off")
    assert pool.shape_key(off, None, WARM) is not None


@requires_bwrap
def test_create_sandbox_uses_the_pool_only_when_the_setting_asks(tmp_path):
    assert pool.POOL.idle() == 0
    create_sandbox(SandboxConfig()).destroy()
    assert pool.POOL.idle() == 0
    try:
        first = create_sandbox(SandboxConfig(), settings=WARM)
        assert first.exec(["true"]).exit_code == 0
        first.destroy()
        assert pool.POOL.idle() == 1
        pool.POOL.wait_ready()
        sandbox = create_sandbox(SandboxConfig(), settings=WARM)
        assert sandbox.exec(["true"]).exit_code == 0
        sandbox.destroy()
    finally:
        pool.POOL.close()
    assert pool.POOL.idle() == 0


@requires_bwrap
def test_a_forked_child_never_uses_the_parents_spares(warm):
    _filled(warm)
    pid = os.fork()
    if pid == 0:  # the child: an empty pool; the parent's spare is neither used nor destroyed
        code = 0 if warm.idle() == 0 else 1
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    (spare,) = _pending(warm)
    assert spare.warm_ready()


def test_settings_name_and_zygote_replies():
    class Django:
        SANDBOX_WARM_POOL = 2

    assert SandboxSettings.from_settings(Django).warm_sandboxes == 2
    assert SandboxSettings().warm_sandboxes == 0
    replies: tuple[dict[str, object], ...] = (
        {"ready": True},
        {"exit": 137, "killed": False, "oom": True},
        {"exec_error": ['File"NotFound', 2]},
    )
    for reply in replies:
        decoded = json.loads(zygote._reply_bytes(reply))
        assert decoded.keys() == reply.keys()
    assert json.loads(zygote._reply_bytes({"exec_error": ['File"NotFound', 2]})) == {"exec_error": ["FileNotFound", 2]}


@requires_bwrap
def test_back_to_back_cases_start_cold_instead_of_waiting_for_the_spare(warm):
    first = warm.checkout(SandboxConfig(), base_dir=None, settings=WARM)
    second = warm.checkout(SandboxConfig(), base_dir=None, settings=WARM)  # the spare is still in its start delay
    try:
        assert warm.stats == {"warm": 0, "cold": 2, "discarded": 0}
        assert first.exec(["true"]).exit_code == 0
        assert second.exec(["true"]).exit_code == 0
    finally:
        first.destroy()
        second.destroy()
    warm.wait_ready()
    assert warm.idle() == 1 and _pending(warm)[0].warm_ready()


@requires_bwrap
def test_the_spare_starts_as_soon_as_the_case_before_it_is_destroyed(warm, monkeypatch):
    monkeypatch.setattr(pool, "PRESTART_DELAY", 60.0)  # only the destroy can start it within the test
    first = warm.checkout(SandboxConfig(), base_dir=None, settings=WARM)
    (entry,) = warm.entries
    assert not entry[2].is_set()  # waits while the case runs
    assert first.exec(["true"]).exit_code == 0
    first.destroy()
    spare = entry[1].result(timeout=10)
    second = warm.checkout(SandboxConfig(), base_dir=None, settings=WARM)
    try:
        assert second is spare and warm.stats == {"warm": 1, "cold": 1, "discarded": 0}
        assert second.exec(["true"]).exit_code == 0
    finally:
        second.destroy()


@requires_bwrap
def test_a_shape_whose_cases_run_nothing_gets_no_spare_until_one_runs_a_command(warm, monkeypatch):
    monkeypatch.setattr(pool, "PRESTART_DELAY", 60.0)  # a spare starts only when the pool says so
    read_only = warm.checkout(SandboxConfig(), base_dir=None, settings=WARM)
    (entry,) = warm.entries  # optimistic at first: a spare is queued
    read_only.write_file("notes.txt", b"host-side tools only")  # never starts bwrap
    read_only.destroy()
    assert entry[1].cancelled() and warm.idle() == 0  # cancelled before it started anything
    for _ in range(3):  # the next read-only cases: cold (a lazy sandbox), and no spare queued
        again = warm.checkout(SandboxConfig(), base_dir=None, settings=WARM)
        assert warm.idle() == 0
        again.destroy()
    assert warm.stats == {"warm": 0, "cold": 4, "discarded": 0}
    runs_one = warm.checkout(SandboxConfig(), base_dir=None, settings=WARM)
    assert warm.idle() == 0
    assert runs_one.exec(["true"]).exit_code == 0
    runs_one.destroy()  # it ran a command: the next spare starts now
    (started,) = _pending(warm)
    nxt = warm.checkout(SandboxConfig(), base_dir=None, settings=WARM)
    try:
        assert nxt is started and warm.stats["warm"] == 1
    finally:
        nxt.destroy()

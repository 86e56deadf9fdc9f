"""Adversarial sandbox escapes: filesystem, environment, network, resources, shell rule."""

from __future__ import annotations

import json
import os
import socket
import time

import pytest

from engine.sandbox import SandboxConfig, SandboxConfigError, SandboxSettings, ShellNotAllowedError, create_sandbox
from engine.sandbox.env import invokes_shell
from engine.tests.tools.support import manifest, requires_bwrap

PROJECT_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


@pytest.fixture
def sandbox():
    sb = create_sandbox(SandboxConfig(allow_shell=True))
    yield sb
    sb.destroy()


@pytest.fixture
def canary_file(tmp_path_factory):
    path = "/tmp/agentclash-canary-db.sqlite3"
    with open(path, "w") as fh:
        fh.write("PROJECT-DB-CANARY")
    yield path
    os.unlink(path)


@requires_bwrap
def test_project_db_canary_is_not_readable(sandbox, canary_file):
    result = sandbox.exec(["cat", canary_file])
    assert result.exit_code != 0 and "CANARY" not in result.stdout


@requires_bwrap
@pytest.mark.parametrize("path", [PROJECT_ROOT, "/root", "/home", "/work", "/var", "/srv"])
def test_host_directories_are_not_visible(sandbox, path):
    result = sandbox.exec(["ls", path])
    assert result.exit_code != 0


@requires_bwrap
def test_the_hosts_opt_is_not_visible_only_an_empty_mount_point_for_package_layers(sandbox):
    # /opt is the skeleton's (empty) mount point for package layers and template paths (packages.py)
    result = sandbox.exec(["ls", "-A", "/opt"])
    assert result.exit_code == 0 and result.stdout.strip() == ""
    assert sandbox.exec(["touch", "/opt/x"]).exit_code != 0


@requires_bwrap
def test_etc_is_minimal(sandbox):
    listing = sandbox.exec(["ls", "/etc"]).stdout.split()
    assert "shadow" not in listing and "passwd" in listing
    assert "root" not in sandbox.exec(["cat", "/etc/passwd"]).stdout


@requires_bwrap
@pytest.mark.parametrize("target", ["/usr/evil", "/etc/evil", "/evil", "/proc/evil"])
def test_writes_outside_workspace_fail(sandbox, target):
    assert sandbox.exec(["touch", target]).exit_code != 0


@requires_bwrap
def test_tmp_is_private_and_workspace_writable(sandbox):
    assert sandbox.exec(["touch", "/tmp/x", "/workspace/y"]).exit_code == 0
    assert not os.path.exists("/tmp/x") or os.path.getsize("/tmp/x") >= 0
    assert sandbox.read_file("y") == b""


@requires_bwrap
def test_worker_environment_does_not_leak(sandbox, monkeypatch):
    monkeypatch.setenv("AGENTCLASH_CANARY_SECRET", "leak-me-please")
    result = sandbox.exec(["env"])
    assert "leak-me-please" not in result.stdout and "DJANGO" not in result.stdout
    assert "HOME=/workspace" in result.stdout


@requires_bwrap
def test_pack_env_vars_are_visible():
    sb = create_sandbox(SandboxConfig.from_manifest(manifest(env={"MODE": "eval"})))
    try:
        assert sb.exec(["printenv", "MODE"]).stdout == "eval\n"
    finally:
        sb.destroy()


@requires_bwrap
def test_network_is_unreachable_when_disabled(sandbox):
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    port = server.getsockname()[1]
    try:
        code = f"import socket; socket.create_connection(('127.0.0.1', {port}), timeout=2)"
        result = sandbox.exec(["python3", "-c", code], timeout=10)
        assert result.exit_code != 0
        assert "Errno" in result.stderr or "refused" in result.stderr.lower()
    finally:
        server.close()


@requires_bwrap
def test_only_loopback_interface_exists_without_network(sandbox):
    result = sandbox.exec(["cat", "/proc/net/dev"])
    names = [line.split(":")[0].strip() for line in result.stdout.splitlines()[2:]]
    assert names == ["lo"]


@requires_bwrap
def test_fork_bomb_is_bounded():
    sb = create_sandbox(SandboxConfig(allow_shell=True, max_processes=32))
    try:
        code = "import os\nfor _ in range(200):\n    try:\n        os.fork() or os.pause()\n    except OSError:\n        print('limited'); break\n"
        start = time.monotonic()
        result = sb.exec(["python3", "-c", code], timeout=10)
        assert "limited" in result.stdout
        assert time.monotonic() - start < 10
        assert sb.exec(["true"]).exit_code == 0  # leftovers were killed, sandbox still usable
    finally:
        sb.destroy()


@requires_bwrap
def test_memory_hog_is_bounded():
    sb = create_sandbox(SandboxConfig(memory_bytes=256 * 1024 * 1024))
    try:
        result = sb.exec(["python3", "-c", "b = bytearray(1024 * 1024 * 1024)"], timeout=10)
        assert result.exit_code != 0 and "MemoryError" in result.stderr
    finally:
        sb.destroy()


@requires_bwrap
def test_file_size_is_bounded():
    sb = create_sandbox(SandboxConfig(file_size_bytes=1024 * 1024))
    try:
        result = sb.exec(["python3", "-c", "open('big','wb').write(b'x' * 4 * 1024 * 1024)"], timeout=10)
        assert result.exit_code != 0
        assert os.path.getsize(sb.host_path("big")) <= 1024 * 1024
    finally:
        sb.destroy()


@requires_bwrap
def test_timeout_kills_children_and_detached_grandchildren(sandbox):
    code = "import os, time\nif os.fork() == 0:\n    os.setsid()\n    time.sleep(30)\nelse:\n    time.sleep(30)\n"
    start = time.monotonic()
    result = sandbox.exec(["python3", "-c", code], timeout=1)
    assert result.exit_code == 124 and result.timed_out
    assert time.monotonic() - start < 5
    rows = [line.split() for line in sandbox.exec(["ps", "-eo", "pid=,comm="]).stdout.splitlines()]
    assert [comm for pid, comm in rows if pid != "1"] == ["ps"]  # only the launcher (PID 1) and ps itself


@requires_bwrap
def test_background_process_does_not_outlive_command(sandbox):
    sandbox.exec(["python3", "-c", "import subprocess; subprocess.Popen(['sleep', '60'])"])
    assert "sleep" not in sandbox.exec(["ps", "-eo", "comm"]).stdout


@requires_bwrap
def test_agent_cannot_kill_the_launcher(sandbox):
    sandbox.exec(["kill", "-9", "1"])
    sandbox.exec(["kill", "-9", "-1"])
    assert sandbox.exec(["echo", "alive"]).stdout == "alive\n"


@requires_bwrap
def test_output_is_capped_at_4_mib(sandbox):
    result = sandbox.exec(["python3", "-c", "import sys; sys.stdout.write('x' * (6 * 1024 * 1024))"])
    assert len(result.stdout) == 4 * 1024 * 1024 and result.stdout_truncated


@requires_bwrap
def test_runs_as_unprivileged_user(sandbox):
    assert sandbox.exec(["id", "-u"]).stdout.strip() != "0" or os.geteuid() != 0


@pytest.mark.parametrize(
    "argv",
    [
        ["sh", "-c", "id"],
        ["/bin/bash", "-c", "id"],
        ["/usr/bin/dash"],
        ["zsh"],
        ["env", "sh", "-c", "id"],
        ["env", "-i", "FOO=1", "bash"],
        ["/usr/bin/env", "--", "dash"],
        ["busybox", "sh"],
        ["timeout", "5", "sh"],
        ["nice", "-n", "5", "bash"],
        ["env", "-S", "python3 -c 1"],
    ],
)
def test_shell_rule_detects_shells(argv):
    assert invokes_shell(argv)


@pytest.mark.parametrize("argv", [["python3", "-c", "1"], ["ls"], ["env", "python3"], ["shasum"]])
def test_shell_rule_allows_non_shells(argv):
    assert not invokes_shell(argv)


def test_sandbox_refuses_shell_when_not_allowed():
    sb = create_sandbox(SandboxConfig(allow_shell=False))
    try:
        with pytest.raises(ShellNotAllowedError):
            sb.exec(["env", "bash", "-c", "id"])
    finally:
        sb.destroy()


def test_missing_bubblewrap_reports_isolation_unavailable(harness_factory, monkeypatch):
    monkeypatch.delenv("SANDBOX_ALLOW_UNISOLATED", raising=False)
    h = harness_factory()
    h.sandbox.isolated = False
    assert h.error("exec", {"command": ["true"]}) == "process isolation unavailable: install bubblewrap"


def test_unisolated_escape_hatch_runs_commands(harness_factory):
    h = harness_factory(settings=SandboxSettings(allow_unisolated=True))
    h.sandbox.isolated = False
    assert json.loads(h.call("exec", {"command": ["echo", "dev"]}).content)["stdout"] == "dev\n"
    assert h.content("query_json", {"query": ".a", "json": '{"a": 1}'})["content"]["result"] == 1


def test_the_engine_ignores_the_unisolated_environment_variable(harness_factory, monkeypatch):
    monkeypatch.setenv("SANDBOX_ALLOW_UNISOLATED", "1")  # only SandboxSettings counts
    h = harness_factory()
    h.sandbox.isolated = False
    assert h.error("exec", {"command": ["true"]}) == "process isolation unavailable: install bubblewrap"


@pytest.mark.parametrize(
    "value,message", [("${secrets.K}", "cannot carry secrets"), ("${ secrets.K}", "cannot carry secrets"), ("x${HOME}", "must be literal")]
)
def test_env_var_placeholders_refused_at_sandbox_creation(value, message):
    with pytest.raises(SandboxConfigError, match=message):
        SandboxConfig.from_manifest(manifest(env={"A": value}))


def test_destroy_is_idempotent_and_removes_workspace():
    sb = create_sandbox(SandboxConfig())
    sb.write_file("a", b"1")
    sb.destroy()
    sb.destroy()
    assert not os.path.exists(sb.root)


def test_config_precedence():
    m = manifest(["file"], shell=False, network=True, allowlist=["10.0.0.0/8"])
    m["filesystem"] = {"max_workspace_bytes": 1000}
    cfg = SandboxConfig.from_manifest(m, {"allow_shell": True, "max_workspace_bytes": 5000})
    assert cfg.allow_shell and cfg.allow_network and cfg.network_allowlist == ("10.0.0.0/8",)
    assert cfg.max_workspace_bytes == 5000 and cfg.allowed_tool_kinds == {"file"}


@requires_bwrap
@pytest.mark.skipif(os.geteuid() != 0, reason="a per-sandbox host uid needs root")
def test_bwrap_and_pid_1_run_as_the_sandboxs_own_host_uid_without_groups(sandbox):
    assert sandbox.exec(["true"]).exit_code == 0
    bwrap_pid = sandbox._launcher.proc.pid
    with open(f"/proc/{bwrap_pid}/task/{bwrap_pid}/children", encoding="ascii") as fh:
        pids = [bwrap_pid, *(int(p) for p in fh.read().split())]
    assert len(pids) == 2  # bwrap and the sandbox's PID 1
    for pid in pids:
        with open(f"/proc/{pid}/status", encoding="ascii") as fh:
            status = dict(line.split(":", 1) for line in fh.read().splitlines())
        assert status["Uid"].split() == [str(sandbox.uid)] * 4  # real, effective, saved, fs
        assert status["Gid"].split() == [str(sandbox.uid)] * 4
        assert status["Groups"].split() == []

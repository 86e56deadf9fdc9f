"""The native launcher (engine/sandbox/launcher.c), every sandbox's PID 1 and the only one: its
build, its trust rules, its request parser, the egress relay it runs as a thread and the data-tool
zygote (engine/sandbox/zygote.py) it keeps beside agent commands. The sandbox attacks of
engine/tests/sandbox run against it too."""

from __future__ import annotations

import array
import contextlib
import json
import os
import shutil
import socket
import subprocess
import tempfile
import threading
from pathlib import Path

import pytest

from engine.sandbox import SandboxConfig, SandboxSettings, create_sandbox, native
from engine.sandbox.bwrap import Launcher, encode_exec
from engine.tests.sandbox.launcher_support import require_native_launcher, requires_cc
from engine.tests.tools.support import requires_bwrap
from engine.types import EngineError

NATIVE = SandboxSettings()


@pytest.fixture
def sandbox(native_launcher_dir):
    require_native_launcher(native_launcher_dir)
    sb = create_sandbox(SandboxConfig(allow_shell=True), settings=NATIVE)
    yield sb
    sb.destroy()


@pytest.fixture
def open_dir():
    """A directory the sandbox's uid can walk to (pytest's own base directory is 0700)."""
    directory = tempfile.mkdtemp(prefix="agentclash-native-test-")
    os.chmod(directory, 0o755)
    yield directory
    shutil.rmtree(directory, ignore_errors=True)


def processes(sb) -> dict[int, str]:
    rows = [line.split(None, 1) for line in sb.exec(["ps", "-eo", "pid=,args="]).stdout.splitlines()]
    return {int(pid): args for pid, args in rows}


def zygote_pid(sb) -> int:
    (pid,) = [pid for pid, args in processes(sb).items() if pid != 1 and "agentclash_zygote.py" in args]
    return pid


def search(sb, timeout: float = 10):
    return sb.run_tool("search_files", {"pattern": "*.txt", "base": "/workspace", "max_results": 10}, timeout=timeout)


@requires_cc
def test_the_source_compiles_without_a_warning(tmp_path):
    argv = [native.compiler(), *native.WARNINGS, "-Werror", "-Wconversion", "-Wno-sign-conversion", *native.HARDENING]
    proc = subprocess.run([*argv, "-c", "-o", str(tmp_path / "l.o"), native.SOURCE], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr


@requires_cc
def test_the_binary_refuses_to_run_outside_its_own_pid_namespace(native_launcher_dir):
    binary = native.launcher_binary(native_launcher_dir, build_missing=False)
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        proc = subprocess.run([binary, str(b.fileno()), "0", "/usr/bin/python3", "/nonexistent", "00"], pass_fds=(b.fileno(),),
                              capture_output=True, timeout=10, check=False)  # fmt: skip
    finally:
        a.close()
        b.close()
    assert proc.returncode == 70 and b"PID 1" in proc.stderr


@requires_cc
def test_a_binary_is_used_only_when_it_and_its_directory_are_ours_and_not_writable_by_others(open_dir, caplog):
    directory = Path(open_dir) / "launcher"
    path = native.launcher_binary(str(directory))
    assert path == str(directory / native.binary_name()) and os.access(path, os.X_OK)
    assert native.launcher_binary(str(directory), build_missing=False) == path
    os.chmod(path, 0o777)  # anyone could swap its bytes
    native._warn_once.cache_clear()
    assert native.launcher_binary(str(directory)) is None
    assert "not trusted" in caplog.text
    os.chmod(path, 0o755)
    os.chmod(directory, 0o777)
    assert native.launcher_binary(str(directory)) is None
    os.chmod(directory, 0o755)
    if os.geteuid() == 0:
        os.chown(path, 12345, 12345)
        assert native.launcher_binary(str(directory)) is None


def test_without_a_directory_or_a_compiler_there_is_no_native_launcher_and_the_reason_is_given(open_dir, monkeypatch, caplog):
    fresh = os.path.join(open_dir, "fresh")
    monkeypatch.setattr(native, "DEFAULT_DIR", "")
    assert native.launcher_binary("") is None
    with pytest.raises(native.LauncherUnavailable, match="SANDBOX_LAUNCHER_DIR"):
        native.require_binary("")
    with pytest.raises(native.LauncherUnavailable, match="not built"):
        native.require_binary(fresh, build_missing=False)
    monkeypatch.setattr(native, "compiler", lambda: None)
    native._warn_once.cache_clear()
    assert native.launcher_binary(fresh) is None
    with pytest.raises(native.LauncherUnavailable, match="no C compiler"):
        native.require_binary(fresh)
    assert "no C compiler" in caplog.text and "sandboxes cannot start" in caplog.text
    with pytest.raises(RuntimeError, match="no C compiler"):
        native.build(fresh)


def test_pid_1_is_always_the_native_launcher_with_or_without_egress(native_launcher_dir, tmp_path, monkeypatch):
    def choose(egress: str | None):
        launcher = Launcher(SandboxConfig(), str(tmp_path), str(tmp_path), None, [], settings=SandboxSettings())
        launcher.egress_dir = egress
        try:
            return launcher._native_binary()
        finally:
            launcher.dispose()

    for other in ("python", "auto", ""):  # the Python PID 1 was removed; there is no fallback to choose
        with pytest.raises(ValueError, match="native"):
            SandboxSettings(launcher=other)
    if native_launcher_dir:
        assert choose(None) == choose("/egress") == native.launcher_binary(native_launcher_dir)
    monkeypatch.setattr(native, "DEFAULT_DIR", "")
    for egress in (None, "/egress"):
        with pytest.raises(EngineError, match="launcher is unavailable"):
            choose(egress)


def test_exec_requests_carry_counted_fields_and_refuse_what_execve_cannot_take():
    assert encode_exec(["ls", "-l"], "/workspace", {"A": "1"}, 7) == b"E7\0/workspace\x002\0ls\0-l\x001\0A=1\0"
    assert encode_exec(["echo", "a\0b"], "/workspace", {}, 7) is None  # would shift every later field
    assert encode_exec(["true"], "/workspace", {"X": "1\0LD_PRELOAD=/workspace/x.so"}, 7) is None
    assert encode_exec(["true"], "/workspace", {"A=B": "1"}, 7) is None
    assert encode_exec([], "/workspace", {}, 7) is None


@requires_bwrap
def test_malformed_requests_get_bad_request_and_the_launcher_keeps_serving(sandbox):
    assert sandbox.exec(["true"]).exit_code == 0
    launcher = sandbox._launcher
    assert launcher.native

    def raw(payload: bytes, nfds: int = 3) -> dict:
        fds = [os.open("/dev/null", os.O_RDWR) for _ in range(nfds)]
        try:
            launcher.sock.sendmsg([payload], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))] if fds else [])
        finally:
            for f in fds:
                os.close(f)
        launcher.sock.settimeout(10)
        return json.loads(launcher.sock.recv(4096))

    bad = {"exec_error": ["BadRequest", 0]}
    with launcher.lock:
        assert raw(b"X1\0/\x001\0true\x000\0") == bad  # unknown op
        assert raw(b"E1\0/\x001\0true\x000\0", nfds=2) == bad  # two fds
        assert raw(b"E1\0/\0") == bad  # no argc
        assert raw(b"E1\0/\x005000\0true\0") == bad  # argc over what the message can hold
        assert raw(b"E1\0/\x003\0true\0") == bad  # fewer arguments than counted
        assert raw(b"E1\0/\x001\0true\0") == bad  # no env count
        assert raw(b"E1\0/\x001\0true\x002\0A=1\0") == bad  # fewer variables than counted
        assert raw(b"E1\0/\x001\0true\x000") == bad  # last field not terminated
        assert raw(b"E1\0/\x00-1\0true\x000\0") == bad
        assert raw(b"E") == bad
        assert raw(b"E1\0/\x001\0/nonexistent\x000\0") == {"exec_error": ["FileNotFoundError", 2]}
        assert raw(b"E1\0/\x001\0/usr/bin/true\x000\0") == {"exit": 0, "killed": False, "oom": False}
    assert sandbox.exec(["sh", "-c", "exit 3"]).exit_code == 3


@requires_bwrap
def test_the_zygote_outlives_agent_commands_and_stays_out_of_their_reach(sandbox):
    sandbox.write_file("a.txt", b"x")
    assert search(sandbox) == ["/workspace/a.txt"]
    pid = zygote_pid(sandbox)
    code = (
        "import os\n"
        f"for path, mode in (('/proc/{pid}/mem', 'rb'), ('/proc/{pid}/environ', 'rb')):\n"
        "    try:\n"
        "        open(path, mode).close(); print('OPENED', path)\n"
        "    except OSError as exc:\n"
        "        print('denied', exc.errno)\n"
        "try:\n"
        f"    print('FDS', os.listdir('/proc/{pid}/fd'))\n"
        "except OSError as exc:\n"
        "    print('denied', exc.errno)\n"
        "import ctypes\n"
        f"print('ptrace', ctypes.CDLL(None, use_errno=True).ptrace(16, {pid}, 0, 0))\n"
    )
    result = sandbox.exec(["python3", "-c", code], timeout=20)
    assert "OPENED" not in result.stdout and "FDS" not in result.stdout
    assert result.stdout.count("denied") == 3 and "ptrace -1" in result.stdout
    sandbox.exec(["sh", "-c", "sleep 60 & echo started"])
    assert zygote_pid(sandbox) == pid  # spared by the clean-up after each command
    assert "sleep" not in " ".join(processes(sandbox).values())  # everything else was not


@requires_bwrap
@pytest.mark.parametrize("signal_name", ["-KILL", "-STOP"])
def test_an_agent_that_kills_or_stops_the_zygote_only_costs_a_restart(sandbox, signal_name):
    sandbox.write_file("a.txt", b"x")
    first = search(sandbox)
    assert first == ["/workspace/a.txt"]
    pid = zygote_pid(sandbox)
    assert sandbox.exec(["kill", signal_name, str(pid)]).exit_code == 0
    assert search(sandbox) == first
    assert zygote_pid(sandbox) != pid


@requires_bwrap
def test_a_tool_past_its_deadline_is_stopped_through_the_zygote(sandbox):
    from engine.sandbox import ToolRunError

    with pytest.raises(ToolRunError) as info:
        sandbox.run_tool("jq", {"text": "1", "query": "last(range(1e12))"}, timeout=1)
    assert info.value.code == "timeout"
    assert [args for args in processes(sandbox).values() if "ps" not in args.split()[0]]  # launcher (+ zygote)
    sandbox.write_file("a.txt", b"x")
    assert search(sandbox) == ["/workspace/a.txt"]  # the sandbox still serves data tools


@requires_cc
def test_a_directory_the_sandbox_uid_cannot_walk_to_is_not_used(tmp_path):
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    os.chmod(private, 0o700)
    native._warn_once.cache_clear()
    assert native.launcher_binary(str(private / "launcher")) is None
    assert not (private / "launcher").exists()  # not even built


@requires_cc
def test_setup_builds_the_current_binary_and_removes_older_ones(open_dir, capsys):
    directory = os.path.join(open_dir, "launcher")
    os.makedirs(directory, mode=0o755)
    stale = os.path.join(directory, "agentclash-launcher-0000000000000000")
    Path(stale).write_bytes(b"old")
    assert native.main([directory]) == 0
    assert os.listdir(directory) == [native.binary_name()]
    assert capsys.readouterr().out.strip() == os.path.join(directory, native.binary_name())
    assert native.main([directory]) == 0  # already there: kept, not rebuilt
    assert native.main([]) == 2


def test_bwrap_drops_to_the_sandbox_uid_through_the_shim_setpriv_or_popen(monkeypatch):
    from engine.sandbox import bwrap

    monkeypatch.setattr(bwrap, "setpriv_path", lambda: "/usr/bin/setpriv")
    assert bwrap.as_sandbox_uid(["bwrap", "--", "x"], 201234, 9) == (
        ["/proc/self/fd/9", "--as-uid", "201234", "--", "bwrap", "--", "x"],
        {},
    )
    argv, kwargs = bwrap.as_sandbox_uid(["bwrap", "--", "x"], 201234)
    assert argv == ["/usr/bin/setpriv", "--reuid=201234", "--regid=201234", "--clear-groups", "--", "bwrap", "--", "x"]
    assert kwargs == {}
    monkeypatch.setattr(bwrap, "setpriv_path", lambda: None)
    assert bwrap.as_sandbox_uid(["bwrap"], 201234) == (["bwrap"], {"user": 201234, "group": 201234, "extra_groups": []})


def as_uid(binary: str, *args: str, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([binary, "--as-uid", *args], capture_output=True, text=True, timeout=10, check=False, **kwargs)


@requires_cc
@pytest.mark.parametrize(
    "args",
    [
        ["0", "--", "/bin/sh", "-c", "echo ran"],  # root
        ["-1", "--", "/bin/sh", "-c", "echo ran"],
        ["12x", "--", "/bin/sh", "-c", "echo ran"],
        ["", "--", "/bin/sh", "-c", "echo ran"],
        [" 12", "--", "/bin/sh", "-c", "echo ran"],
        ["+12", "--", "/bin/sh", "-c", "echo ran"],
        ["012", "--", "/bin/sh", "-c", "echo ran"],
        ["2147483647", "--", "/bin/sh", "-c", "echo ran"],  # past 2^31 - 2
        ["4294967295", "--", "/bin/sh", "-c", "echo ran"],  # (uid_t)-1: "unchanged" to setresuid
        ["4294967296", "--", "/bin/sh", "-c", "echo ran"],  # wraps to 0
        ["201234", "/bin/sh", "-c", "echo ran"],  # no "--"
        ["201234", "-x", "/bin/sh", "-c", "echo ran"],
        ["201234", "--"],  # no program
        ["201234"],
        [],
        ["201234", "--", "sh", "-c", "echo ran"],  # not an absolute path: no PATH search
    ],
)
def test_the_uid_shim_refuses_bad_arguments_before_dropping_anything(native_launcher_dir, args):
    binary = native.launcher_binary(native_launcher_dir, build_missing=False)
    proc = as_uid(binary, *args)
    assert (proc.returncode, proc.stdout) == (126, "")
    assert proc.stderr.startswith("agentclash-launcher --as-uid: ") and proc.stderr.count("\n") == 1


requires_root = pytest.mark.skipif(os.geteuid() != 0, reason="dropping to another uid needs root")


@requires_cc
@requires_root
def test_the_uid_shim_drops_uid_gid_and_groups_then_execs_with_fds_and_environment_untouched(native_launcher_dir):
    binary = native.launcher_binary(native_launcher_dir, build_missing=False)
    shim = native.open_trusted(binary)
    other = os.open("/dev/null", os.O_RDONLY | os.O_CLOEXEC)  # stands for bwrap's pass_fds
    assert shim is not None
    script = "cat /proc/self/status; echo env=$AGENTCLASH_X; for f in /proc/self/fd/*; do echo fd=$(readlink $f); done"
    try:
        proc = subprocess.run(
            [f"/proc/self/fd/{shim}", "--as-uid", "201234", "--", "/bin/sh", "-c", script],
            pass_fds=(shim, other), env={"AGENTCLASH_X": "kept"}, extra_groups=[4321, 4322],  # groups to clear
            capture_output=True, text=True, timeout=10, check=False,
        )  # fmt: skip
    finally:
        os.close(shim)
        os.close(other)
    assert proc.returncode == 0, proc.stderr
    status = {line.split(":")[0]: line.split(":")[1].split() for line in proc.stdout.splitlines() if ":" in line}
    assert status["Uid"] == ["201234"] * 4 and status["Gid"] == ["201234"] * 4 and status["Groups"] == []
    assert "env=kept" in proc.stdout
    fds = [line[3:] for line in proc.stdout.splitlines() if line.startswith("fd=")]
    assert "/dev/null" in fds  # the fds it was given stay open
    assert binary not in fds  # but not the one it was executed through: it would reach the sandbox
    # without the right to drop (not root), it refuses rather than run the program as itself
    nested = as_uid(binary, "201234", "--", binary, "--as-uid", "201235", "--", "/bin/sh", "-c", "echo ran")
    assert (nested.returncode, nested.stdout) == (126, "") and "setgroups" in nested.stderr
    missing = as_uid(binary, "201234", "--", "/nonexistent/program")
    assert missing.returncode == 127 and "cannot execute /nonexistent/program" in missing.stderr


def sandbox_processes(sb) -> list[int]:
    """bwrap (the host's child) and the processes it forked (PID 1)."""
    pid = sb._launcher.proc.pid
    with open(f"/proc/{pid}/task/{pid}/children") as fh:
        return [pid, *map(int, fh.read().split())]


def ids(pid: int) -> dict[str, list[str]]:
    with open(f"/proc/{pid}/status") as fh:
        return {k: v.split() for k, _, v in (line.partition(":") for line in fh) if k in ("Uid", "Gid", "Groups")}


@requires_bwrap
@requires_root
def test_sandboxes_drop_to_their_uid_through_the_shim_else_setpriv_else_popen(native_launcher_dir, monkeypatch):
    from engine.sandbox import bwrap

    require_native_launcher(native_launcher_dir)
    binary = native.launcher_binary(native_launcher_dir, build_missing=False)
    used: list[list[str]] = []
    real = bwrap.as_sandbox_uid

    def spy(argv, uid, shim_fd=None):
        argv, kwargs = real(argv, uid, shim_fd)
        used.append(argv[:2] if not kwargs else ["popen"])
        return argv, kwargs

    monkeypatch.setattr(bwrap, "as_sandbox_uid", spy)

    def check(expected: str) -> None:
        sb = create_sandbox(SandboxConfig(allow_shell=True), settings=NATIVE)
        try:
            result = sb.exec(["sh", "-c", "grep -E '^(Uid|Gid|Groups)' /proc/self/status"])
            assert result.exit_code == 0, result.stderr
            uid = str(sb._launcher.uid)
            assert result.stdout.split() == ["Uid:", *[uid] * 4, "Gid:", *[uid] * 4, "Groups:"]
            assert sb._launcher.native == binary
            for pid in sandbox_processes(sb):  # bwrap and PID 1
                assert ids(pid) == {"Uid": [uid] * 4, "Gid": [uid] * 4, "Groups": []}
                for fd in os.listdir(f"/proc/{pid}/fd"):  # the shim's fd reached neither
                    with contextlib.suppress(OSError):
                        assert not os.path.samestat(os.stat(f"/proc/{pid}/fd/{fd}"), os.stat(binary)), (pid, fd)
            for fd in os.listdir("/proc/self/fd"):  # nor stayed open in the worker
                with contextlib.suppress(OSError):
                    assert not os.path.samestat(os.stat(f"/proc/self/fd/{fd}"), os.stat(binary))
        finally:
            sb.destroy()
        kind_used = used.pop()
        assert used == []
        if expected == "shim":
            assert kind_used[0].startswith("/proc/self/fd/") and kind_used[1] == "--as-uid"
        else:
            assert kind_used[0] == expected

    check("shim")
    planted = os.path.join(tempfile.mkdtemp(prefix="agentclash-planted-"), native.binary_name())
    os.chmod(os.path.dirname(planted), 0o755)
    shutil.copy(binary, planted)
    os.chmod(planted, 0o777)  # anyone could have written its bytes: never run as root
    try:
        assert bwrap.uid_shim_fd(NATIVE, planted) is None  # (as PID 1 it is refused too: tested below)
    finally:
        shutil.rmtree(os.path.dirname(planted), ignore_errors=True)
    monkeypatch.setattr(bwrap, "uid_shim_fd", lambda settings, binary=None: None)  # e.g. a noexec mount
    check(bwrap.setpriv_path() or "popen")
    monkeypatch.setattr(bwrap, "setpriv_path", lambda: None)
    check("popen")


@requires_cc
def test_the_fd_bwrap_binds_is_checked_not_the_path(open_dir):
    directory = Path(open_dir) / "launcher"
    path = native.launcher_binary(str(directory))
    assert path is not None
    fd = native.open_trusted(path)
    assert fd is not None
    try:
        assert os.path.samestat(os.fstat(fd), os.stat(path))
    finally:
        os.close(fd)
    planted = Path(open_dir) / "planted"
    shutil.copy(path, planted)
    os.chmod(planted, 0o777)  # anyone could have written its bytes
    (directory / "swapped").symlink_to(planted)
    assert native.open_trusted(str(directory / "swapped")) is None  # a symlink swapped in is not followed
    assert native.open_trusted(str(planted)) is None
    os.chmod(directory, 0o777)
    try:
        assert native.open_trusted(path) is None
    finally:
        os.chmod(directory, 0o755)


@requires_bwrap
def test_a_binary_swapped_after_the_trust_check_never_becomes_pid_1(native_launcher_dir, open_dir, monkeypatch):
    require_native_launcher(native_launcher_dir)
    planted = os.path.join(open_dir, native.binary_name())
    shutil.copy(native.launcher_binary(native_launcher_dir, build_missing=False), planted)
    os.chmod(planted, 0o777)  # anyone could have written its bytes
    # what require_binary checked by path is not what the path names when bwrap binds it
    monkeypatch.setattr(native, "require_binary", lambda directory, build_missing=True: planted)
    sb = create_sandbox(SandboxConfig(allow_shell=True), settings=NATIVE)
    try:
        with pytest.raises(EngineError, match="no longer trusted"):  # no other PID 1 to fall back to
            sb.exec(["true"])
        assert sb._launcher.proc is None  # nothing was started
    finally:
        sb.destroy()


@requires_bwrap
def test_long_argument_lists_and_relative_path_entries_behave_as_execvp_would(native_launcher_dir):
    require_native_launcher(native_launcher_dir)
    sb = create_sandbox(SandboxConfig(allow_shell=True), settings=NATIVE)
    try:
        assert sb.exec(["sh", "-c", "echo $#", "sh", *["a"] * 5000]).stdout == "5000\n"  # more than 4,096 items
        sb.write_file("bin/hello", b"#!/bin/sh\necho top\n")
        sb.write_file("sub/hello", b"#!/bin/sh\necho sub\n")
        assert sb.exec(["chmod", "+x", "bin/hello", "sub/hello"]).exit_code == 0
        # PATH entries are relative to the command's cwd (as execvp would), not PID 1's
        result = sb.exec(["hello"], cwd="/workspace/sub", env={"PATH": "bin:."})
        assert (result.exit_code, result.stdout) == (0, "sub\n")
    finally:
        sb.destroy()


# ---------------------------------------------------------------------------------------- egress relay
@pytest.fixture
def egress_sandbox(native_launcher_dir):
    """A sandbox whose pack has network: PID 1 runs the egress relay (127.0.0.1:3128 -> the host's
    proxy); the test's loopback servers are reachable because both allowlists cover 127/8."""
    require_native_launcher(native_launcher_dir)
    cfg = SandboxConfig(allow_shell=True, allow_network=True, network_allowlist=("127.0.0.0/8",))
    cfg.apply_operator_network("allowlist", ("127.0.0.0/8",))
    sb = create_sandbox(cfg, settings=NATIVE)
    yield sb
    sb.destroy()


@pytest.fixture
def echo_port():
    """A host TCP server that echoes everything, then half-closes when its client does."""
    server = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def echo(conn: socket.socket) -> None:
        with conn:
            while data := conn.recv(1 << 16):
                conn.sendall(data)
            conn.shutdown(socket.SHUT_WR)

    def serve() -> None:
        server.settimeout(0.05)
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            conn.settimeout(30)
            threading.Thread(target=echo, args=(conn,), daemon=True).start()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield server.getsockname()[1]
    stop.set()
    thread.join(timeout=5)
    server.close()


TUNNEL = (
    "import hashlib, socket, sys, threading\n"
    "size = int(sys.argv[2])\n"
    "s = socket.create_connection(('127.0.0.1', 3128), timeout=30)\n"
    "s.sendall(('CONNECT %s HTTP/1.1\\r\\nHost: %s\\r\\n\\r\\n' % (sys.argv[1], sys.argv[1])).encode())\n"
    "head = b''\n"
    "while not head.endswith(b'\\r\\n\\r\\n'):\n"
    "    head += s.recv(1)\n"
    "print(head.split(b'\\r\\n')[0].decode())\n"
    "data = bytes(range(256)) * (size // 256)\n"
    "def send():\n"
    "    s.sendall(data)\n"
    "    s.shutdown(socket.SHUT_WR)\n"
    "threading.Thread(target=send).start()\n"
    "got = hashlib.sha256()\n"
    "n = 0\n"
    "while chunk := s.recv(1 << 16):\n"
    "    got.update(chunk); n += len(chunk)\n"
    "print(n, got.hexdigest() == hashlib.sha256(data).hexdigest())\n"
)


@requires_bwrap
def test_an_egress_sandbox_runs_the_relay_as_a_thread_of_the_native_pid_1(egress_sandbox, echo_port):
    result = egress_sandbox.exec(["python3", "-c", TUNNEL, f"127.0.0.1:{echo_port}", "4096"], timeout=60)
    assert result.stdout.split("\n")[:2] == ["HTTP/1.1 200 Connection established", "4096 True"], result
    rows = processes(egress_sandbox)
    assert rows[1].startswith("/.agentclash/bin/launcher ") and "egress=3128,64,/run/agentclash-egress/proxy.sock" in rows[1]
    assert [args for pid, args in rows.items() if pid != 1 and not args.startswith("ps ")] == []  # no Python relay process
    threads = egress_sandbox.exec(["ls", "/proc/1/task"]).stdout.split()
    assert len(threads) == 2  # PID 1 and its relay thread
    # the relay's listener and connections are close-on-exec: a command inherits none of them
    assert egress_sandbox.exec(["sh", "-c", "ls /proc/$$/fd"]).stdout.split() == ["0", "1", "2"]


@requires_bwrap
def test_the_relay_carries_a_large_tunnel_both_ways_and_half_closes(egress_sandbox, echo_port):
    size = 8 * 1024 * 1024  # 128 times the relay's per-direction buffer: back pressure both ways
    result = egress_sandbox.exec(["python3", "-c", TUNNEL, f"127.0.0.1:{echo_port}", str(size)], timeout=60)
    assert result.exit_code == 0, result.stderr
    assert result.stdout.split("\n")[:2] == ["HTTP/1.1 200 Connection established", f"{size} True"], result.stdout


@requires_bwrap
def test_an_agent_cannot_kill_or_stop_the_relay(egress_sandbox, echo_port):
    killed = egress_sandbox.exec(["sh", "-c", "kill -9 -1; kill -STOP 1; kill -9 1; echo done"])
    assert "done" in killed.stdout
    result = egress_sandbox.exec(["python3", "-c", TUNNEL, f"127.0.0.1:{echo_port}", "65536"], timeout=60)
    assert result.stdout.split("\n")[:2] == ["HTTP/1.1 200 Connection established", "65536 True"], result


@requires_bwrap
@pytest.mark.parametrize("limit", [0, 65])
def test_a_malformed_egress_argument_stops_the_launcher_before_it_serves(native_launcher_dir, monkeypatch, limit):
    from engine.sandbox import bwrap

    require_native_launcher(native_launcher_dir)
    monkeypatch.setattr(bwrap, "MAX_FORWARDED_CONNECTIONS", limit)  # the relay serves 1 to 64 connections
    cfg = SandboxConfig(allow_shell=True, allow_network=True, network_allowlist=("127.0.0.0/8",))
    cfg.apply_operator_network("allowlist", ())
    sb = create_sandbox(cfg, settings=NATIVE)
    try:
        with pytest.raises(EngineError, match="failed to start"):
            sb.exec(["true"])
    finally:
        sb.destroy()


# ---------------------------------------------------------------------------------------- the zygote
@requires_bwrap
def test_the_zygote_refuses_to_be_pid_1(tmp_path):
    from engine.sandbox import bwrap, zygote

    argv = [bwrap.bwrap_path() or "bwrap", "--unshare-pid", "--as-pid-1", "--ro-bind", "/", "/", "--proc", "/proc", "--"]
    proc = subprocess.run([*argv, "/usr/bin/python3", "-I", "-S", zygote.__file__, "3", "00"],
                          capture_output=True, text=True, timeout=30, check=False)  # fmt: skip
    assert proc.returncode == 1 and "never PID 1" in proc.stderr, proc.stderr

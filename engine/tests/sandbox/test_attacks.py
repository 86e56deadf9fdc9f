"""Issue 14's sandbox attacks, each as a bounded test that must fail against the sandbox.

Every test is bounded in time (calls that could hang run in a watchdog thread) and memory
(allocations stay well under the caps they probe), and touches nothing but the sandbox and files
or loopback servers it creates itself.
"""

from __future__ import annotations

import functools
import json
import os
import platform
import shutil
import signal
import socket
import sqlite3
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

from engine.sandbox import SandboxConfig, SandboxSettings, create_sandbox, pool, seccomp
from engine.tests.tools.support import manifest, requires_bwrap
from engine.types import EngineError

MiB = 1024 * 1024


def bounded(fn: Callable[[], Any], seconds: float) -> Any:
    """fn() or a test failure after ``seconds`` (a blocked call leaks a daemon thread, not the run)."""
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = fn()
        except BaseException as exc:
            box["error"] = exc

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        pytest.fail(f"call did not return within {seconds} s")
    if "error" in box:
        raise box["error"]
    return box.get("value")


@pytest.fixture(params=["cold", "warm"])
def sandbox(request):
    """Every attack runs against a cold sandbox and against a pre-started one from the warm pool."""
    if request.param == "cold":
        sb = create_sandbox(SandboxConfig(allow_shell=True))
        yield sb
        sb.destroy()
        return
    warm = pool.WarmPool()
    settings = SandboxSettings(warm_sandboxes=1)
    try:
        first = warm.checkout(SandboxConfig(allow_shell=True), base_dir=None, settings=settings)
        assert first.exec(["true"]).exit_code == 0  # a case of this shape that runs commands: a spare follows
        first.destroy()
        warm.wait_ready()
        sb = warm.checkout(SandboxConfig(allow_shell=True), base_dir=None, settings=settings)
        try:
            assert warm.stats["warm"] == 1
            yield sb
        finally:
            sb.destroy()
    finally:
        warm.close()


def py(sb, code: str, timeout: float = 20, **kw: Any):
    return sb.exec(["python3", "-c", code], timeout=timeout, **kw)


# ---------------------------------------------------------------------------- the launcher (item 3)
@requires_bwrap
def test_agent_cannot_ptrace_the_launcher(sandbox):
    code = (
        "import ctypes\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        "for req in (16, 0x4206):  # PTRACE_ATTACH, PTRACE_SEIZE\n"
        "    print(libc.ptrace(req, 1, 0, 0), ctypes.get_errno())\n"
    )
    result = py(sandbox, code)
    assert result.stdout.split() == ["-1", "1", "-1", "1"]  # EPERM both times


@requires_bwrap
def test_agent_cannot_open_the_launchers_memory_environment_or_fds(sandbox):
    code = (
        "import os\n"
        "for path, mode in (('/proc/1/mem', 'r+b'), ('/proc/1/mem', 'rb'), ('/proc/1/environ', 'rb')):\n"
        "    try:\n"
        "        open(path, mode).close(); print('OPENED', path)\n"
        "    except OSError as exc:\n"
        "        print('denied', exc.errno)\n"
        "try:\n"
        "    print('FDS', os.listdir('/proc/1/fd'))\n"
        "except OSError as exc:\n"
        "    print('denied', exc.errno)\n"
    )
    result = py(sandbox, code)
    assert "OPENED" not in result.stdout and "FDS" not in result.stdout
    assert result.stdout.count("denied") == 4


@requires_bwrap
def test_launcher_survives_a_tracer_attempt_and_still_kills_leftovers(sandbox):
    py(sandbox, "import ctypes, subprocess; ctypes.CDLL(None).ptrace(16, 1, 0, 0); subprocess.Popen(['sleep', '60'])")
    assert "sleep" not in sandbox.exec(["ps", "-eo", "comm"]).stdout


@requires_bwrap
def test_nested_user_namespaces_and_mounts_fail(sandbox):
    result = sandbox.exec(["unshare", "-Urm", "true"])
    assert result.exit_code != 0
    result = py(sandbox, "import ctypes; l = ctypes.CDLL(None, use_errno=True); print(l.unshare(0x10000000), ctypes.get_errno())")
    assert result.stdout.split() == ["-1", "1"]


@requires_bwrap
def test_seccomp_denies_the_wider_kernel_surface(sandbox):
    _, numbers = seccomp.ARCHES[platform.machine()]
    names = ["bpf", "perf_event_open", "keyctl", "add_key", "request_key", "mount", "umount2", "process_vm_readv",
             "process_vm_writev", "init_module", "finit_module", "kexec_load", "setns", "open_by_handle_at",
             "userfaultfd", "pidfd_getfd", "fsopen", "swapon", "reboot", "syslog"]  # fmt: skip
    calls = {name: numbers[name] for name in names}
    code = (
        "import ctypes, json\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        f"calls = {calls!r}\n"
        "out = {}\n"
        "for name, nr in calls.items():\n"
        "    ctypes.set_errno(0)\n"
        "    rc = libc.syscall(nr, 0, 0, 0, 0, 0, 0)\n"
        "    out[name] = [rc, ctypes.get_errno()]\n"
        f"out['io_uring_setup'] = [libc.syscall({numbers['io_uring_setup']}, 1, 0), ctypes.get_errno()]\n"
        f"out['prlimit_pid1'] = [libc.syscall({numbers['prlimit64']}, 1, 7, 0, 0), ctypes.get_errno()]\n"
        f"out['prlimit_self'] = [libc.syscall({numbers['prlimit64']}, 0, 7, 0, 0), ctypes.get_errno()]\n"
        "print(json.dumps(out))\n"
    )
    out = json.loads(py(sandbox, code).stdout)
    for name in names:
        assert out[name] == [-1, 1], name  # EPERM
    assert out["io_uring_setup"] == [-1, 38]  # ENOSYS: runtimes fall back to plain syscalls
    assert out["prlimit_pid1"] == [-1, 1]
    assert out["prlimit_self"][0] == 0


def _bpf_run(program: bytes, nr: int, arch: int, args: tuple[int, ...] = ()) -> int:
    """A tiny classic-BPF interpreter, enough for our filter (LD W ABS, JEQ, JGE, JSET, RET)."""
    data = (nr.to_bytes(4, "little", signed=nr < 0) + arch.to_bytes(4, "little") + bytes(8)
            + b"".join(a.to_bytes(8, "little") for a in (*args, 0, 0, 0, 0, 0, 0)[:6]))  # fmt: skip
    code = [
        tuple(int.from_bytes(program[i + o : i + o + n], "little") for o, n in ((0, 2), (2, 1), (3, 1), (4, 4)))
        for i in range(0, len(program), 8)
    ]
    pc, acc = 0, 0
    while True:
        op, jt, jf, k = code[pc]
        if op == 0x20:
            acc = int.from_bytes(data[k : k + 4], "little")
        elif op == 0x06:
            return k
        else:
            taken = {0x15: acc == k, 0x35: acc >= k, 0x45: bool(acc & k)}[op]
            pc += jt if taken else jf
        pc += 1


@pytest.mark.parametrize("machine", sorted(seccomp.ARCHES))
def test_seccomp_program_decisions(machine):
    arch, numbers = seccomp.ARCHES[machine]
    program = seccomp.build_filter(machine)
    eperm, enosys = seccomp.RET_ERRNO | 1, seccomp.RET_ERRNO | 38
    assert _bpf_run(program, numbers["ptrace"], arch) == eperm
    assert _bpf_run(program, numbers["clone3"], arch) == enosys
    assert _bpf_run(program, numbers["clone"], arch, (0x11,)) == seccomp.RET_ALLOW  # fork()
    assert _bpf_run(program, numbers["clone"], arch, (0x10000011,)) == eperm  # CLONE_NEWUSER
    assert _bpf_run(program, numbers["ioctl"], arch, (0, seccomp.TIOCSTI)) == eperm
    assert _bpf_run(program, numbers["ioctl"], arch, (0, 0x5401)) == seccomp.RET_ALLOW
    assert _bpf_run(program, numbers["prlimit64"], arch, (1,)) == eperm
    assert _bpf_run(program, numbers["prlimit64"], arch, (0,)) == seccomp.RET_ALLOW
    assert _bpf_run(program, 0, arch) == seccomp.RET_ALLOW  # read
    assert _bpf_run(program, 0, 0x40000003) == eperm  # i386 int 0x80
    if machine == "x86_64":
        assert _bpf_run(program, 0x40000000, arch) == eperm  # x32
    for name in seccomp.UNACCOUNTED_MEMORY:  # allowed when a cgroup charges them
        assert _bpf_run(program, numbers[name], arch) == seccomp.RET_ALLOW
        assert _bpf_run(seccomp.build_filter(machine, deny_unaccounted_memory=True), numbers[name], arch) == eperm
    eafnosupport = seccomp.RET_ERRNO | 97
    for name in ("socket", "socketpair"):
        for family in (1, 2, 10, 16):  # unix, inet, inet6, netlink
            assert _bpf_run(program, numbers[name], arch, (family, 1)) == seccomp.RET_ALLOW, (name, family)
        for family in (40, 17, 31, 38, 44, 29):  # vsock, packet, bluetooth, alg, xdp, can
            assert _bpf_run(program, numbers[name], arch, (family, 1)) == eafnosupport, (name, family)


@requires_bwrap
def test_only_unix_inet_inet6_and_netlink_sockets_can_be_created(sandbox):
    # issue 23: AF_VSOCK is not covered by the network namespace; creating one must fail.
    code = (
        "import json, socket\n"
        "out = {}\n"
        "for name, family, kind in [('vsock', 40, socket.SOCK_STREAM), ('packet', 17, socket.SOCK_DGRAM),\n"
        "                           ('alg', 38, socket.SOCK_SEQPACKET), ('unix', 1, socket.SOCK_STREAM),\n"
        "                           ('inet', 2, socket.SOCK_STREAM), ('inet6', 10, socket.SOCK_STREAM)]:\n"
        "    try:\n"
        "        socket.socket(family, kind).close(); out[name] = 0\n"
        "    except OSError as e:\n"
        "        out[name] = e.errno\n"
        "try:\n"
        "    socket.socketpair(40, socket.SOCK_STREAM); out['vsock_pair'] = 0\n"
        "except OSError as e:\n"
        "    out['vsock_pair'] = e.errno\n"
        "print(json.dumps(out))\n"
    )
    out = json.loads(py(sandbox, code).stdout)
    assert out["vsock"] == out["packet"] == out["alg"] == out["vsock_pair"] == 97  # EAFNOSUPPORT
    assert out["unix"] == out["inet"] == 0
    assert out["inet6"] in (0, 97)  # 97 only where the host kernel has no IPv6


@requires_bwrap
@pytest.mark.parametrize("cgroup_parent", ["auto", "off"])
def test_memory_outside_every_resident_set_is_charged_or_refused(cgroup_parent):
    """Unmapped memfd pages and SysV segments are in no process's RSS: with a cgroup they are
    charged (and OOM-killed past the cap); without one the watchdog cannot see them, so they are refused."""
    config = SandboxConfig(allow_shell=True, memory_bytes=256 * MiB)
    sb = create_sandbox(config, settings=SandboxSettings(cgroup_parent=cgroup_parent))
    try:
        code = (
            "import ctypes, os\n"
            "libc = ctypes.CDLL(None, use_errno=True)\n"
            "fd = libc.memfd_create(b'x', 0)\n"
            "print('memfd', fd if fd < 0 else 'ok', ctypes.get_errno() if fd < 0 else 0)\n"
            "seg = libc.shmget(0, 1 << 20, 0o1600)\n"  # IPC_PRIVATE, IPC_CREAT | 0600
            "print('shmget', seg if seg < 0 else 'ok', ctypes.get_errno() if seg < 0 else 0)\n"
            "if seg >= 0: libc.shmctl(seg, 0, None)\n"  # IPC_RMID
        )
        result = bounded(lambda: py(sb, code), 30)
        lines = result.stdout.split("\n")
        if sb.cgroup is None:
            assert lines[:2] == ["memfd -1 1", "shmget -1 1"]  # EPERM: the watchdog could not count them
        else:
            assert lines[:2] == ["memfd ok 0", "shmget ok 0"]
    finally:
        sb.destroy()


# ---------------------------------------------------------------------------- host-side tools (item 2)
@requires_bwrap
def test_jq_env_sees_only_the_sandbox_environment(harness_factory, monkeypatch):
    monkeypatch.setenv("DJANGO_SECRET_KEY", "JQ-ENV-CANARY-7f3a")
    monkeypatch.setenv("DATABASE_URL", "postgres://JQ-ENV-CANARY-7f3a@db/x")
    h = harness_factory()
    env = h.content("query_json", {"query": "$ENV", "json": "{}"})["content"]["result"]
    assert "JQ-ENV-CANARY-7f3a" not in json.dumps(env)
    assert env["HOME"] == "/workspace" and "DJANGO_SECRET_KEY" not in env
    assert "JQ-ENV-CANARY-7f3a" not in json.dumps(h.content("query_json", {"query": "env", "json": "{}"}))


@requires_bwrap
def test_jq_module_search_cannot_read_host_files(harness_factory, tmp_path):
    mods = tmp_path / "jqmods"
    mods.mkdir()
    (mods / "x.jq").write_text('def leak: "JQ-MODULE-CANARY";\n')
    (mods / "d.json").write_text('{"k": "JQ-DATA-CANARY"}')
    os.chmod(tmp_path, 0o755)
    h = harness_factory()
    for query in (
        f'import "x" as x {{search: "{mods}"}}; x::leak',
        f'include "x" {{search: "{mods}"}}; leak',
        f'import "d" as $d {{search: "{mods}"}}; $d',
        'import "x" as x {search: "/work/main"}; x::leak',
    ):
        result = h.call("query_json", {"query": query, "json": "null"})
        assert result.is_error and "CANARY" not in result.content, query


@requires_bwrap
def test_sqlite_symlink_swap_race_cannot_read_a_root_only_file(harness_factory, tmp_path):
    canary = tmp_path / "root-only.sqlite3"
    with sqlite3.connect(canary) as conn:
        conn.execute("CREATE TABLE t(v TEXT)")
        conn.execute("INSERT INTO t VALUES ('SQLITE-ROOT-CANARY')")
    os.chmod(canary, 0o600)
    h = harness_factory(manifest(["data"]))
    legit = tmp_path / "legit.sqlite3"
    with sqlite3.connect(legit) as conn:
        conn.execute("CREATE TABLE t(v TEXT)")
        conn.execute("INSERT INTO t VALUES ('workspace row')")
    h.sandbox.write_file("db.sqlite3", legit.read_bytes())
    target = h.sandbox.host_path("db.sqlite3")
    stop = threading.Event()

    def swap() -> None:  # the racing attacker: flips the path between a real file and a link out
        link, real = target + ".link", target + ".real"
        shutil.copy(legit, real)
        while not stop.is_set():
            os.symlink(str(canary), link)
            os.replace(link, target)
            shutil.copy(real, link)
            os.replace(link, target)

    racer = threading.Thread(target=swap, daemon=True)
    racer.start()
    try:
        for _ in range(50):
            result = h.call("query_sql", {"engine": "sqlite", "query": "SELECT v FROM t", "database_path": "db.sqlite3"})
            assert "SQLITE-ROOT-CANARY" not in result.content
    finally:
        stop.set()
        racer.join(5)


@requires_bwrap
def test_fifo_blocks_no_tool(harness_factory):
    h = harness_factory(manifest(shell=True))
    for name in ("pipe", "data.json", "db.sqlite", "app/package.json"):
        h.sandbox.write_file(name, b"")
        path = h.sandbox.host_path(name)
        os.unlink(path)
        os.mkfifo(path)
    calls = [
        ("read_file", {"path": "pipe"}),
        ("write_file", {"path": "pipe", "content": "x"}),
        ("query_json", {"query": ".", "file_path": "data.json"}),
        ("query_sql", {"engine": "sqlite", "query": "select 1", "database_path": "db.sqlite"}),
        ("run_tests", {"working_directory": "/workspace/app"}),
        ("search_text", {"pattern": "x"}),
    ]
    for name, args in calls:
        start = time.monotonic()
        result = bounded(functools.partial(h.call, name, args), 10)
        assert time.monotonic() - start < 5, name
        if name != "search_text":
            assert result.is_error, name


@requires_bwrap
def test_catastrophic_regex_returns_fast(harness_factory):
    h = harness_factory()
    h.sandbox.write_file("evil.txt", (("a" * 40 + "!\n") * 50 + "a" * 40 + "\n").encode())
    start = time.monotonic()
    matches = bounded(lambda: h.content("search_text", {"pattern": "^(a+)+$"}), 10)["content"]["matches"]
    assert time.monotonic() - start < 2
    assert [m["line_number"] for m in matches] == [51]
    assert h.error("search_text", {"pattern": r"(a)\1"}).startswith("invalid regex")  # RE2: no backreferences


# ---------------------------------------------------------------------------- totals (item 5)
def _three_hogs(each_mib: int) -> str:
    return (
        "import os, sys, time\n"
        "kids = []\n"
        "for i in range(3):\n"
        "    pid = os.fork()\n"
        "    if pid == 0:\n"
        f"        b = bytearray({each_mib} * 1024 * 1024)\n"
        "        for j in range(0, len(b), 4096): b[j] = 1\n"
        "        print('held', flush=True); time.sleep(3); os._exit(0)\n"
        "    kids.append(pid)\n"
        "for pid in kids: os.waitpid(pid, 0)\n"
    )


@requires_bwrap
@pytest.mark.parametrize("cgroup_parent", ["auto", "off"])
def test_memory_cap_holds_for_all_processes_together(cgroup_parent):
    config = SandboxConfig(allow_shell=True, memory_bytes=320 * MiB)  # each process alone fits
    sb = create_sandbox(config, settings=SandboxSettings(cgroup_parent=cgroup_parent))
    try:
        result = py(sb, _three_hogs(150), timeout=20)
        assert result.exit_code == 137 and "the sandbox ran out of memory" in result.stderr
        if sb.cgroup is not None:  # the kernel's own record: the total never passed the cap
            with open(os.path.join(sb.cgroup.memory, "memory.max_usage_in_bytes")) as fh:
                assert int(fh.read()) <= 320 * MiB
        assert sb.exec(["true"]).exit_code == 0  # the sandbox still works afterwards
    finally:
        sb.destroy()


@requires_bwrap
def test_memory_cap_counts_processes_whose_main_thread_exited():
    """The watchdog (no cgroup) read /proc/PID/statm only: a process whose main thread called
    pthread_exit reads 0 there while its other threads hold memory."""
    code = (
        "import ctypes, os, threading, time\n"
        "def hog():\n"
        "    time.sleep(0.5)  # after the main thread is gone\n"
        "    b = bytearray(150 * 1024 * 1024)\n"
        "    for j in range(0, len(b), 4096): b[j] = 1\n"
        "    print('held', flush=True); time.sleep(3)\n"
        "kids = []\n"
        "for i in range(3):\n"
        "    pid = os.fork()\n"
        "    if pid == 0:\n"
        "        threading.Thread(target=hog).start()\n"
        "        ctypes.CDLL(None).pthread_exit(None)\n"
        "    kids.append(pid)\n"
        "for pid in kids: os.waitpid(pid, 0)\n"
    )
    config = SandboxConfig(allow_shell=True, memory_bytes=320 * MiB)  # each process alone fits
    sb = create_sandbox(config, settings=SandboxSettings(cgroup_parent="off"))  # the launcher's watchdog alone
    try:
        assert sb.cgroup is None
        result = py(sb, code, timeout=20)
        assert result.exit_code == 137 and "the sandbox ran out of memory" in result.stderr
        assert sb.exec(["true"]).exit_code == 0
    finally:
        sb.destroy()


@requires_bwrap
def test_an_ignored_sigchld_in_the_worker_does_not_reach_the_launcher():
    """SIG_IGN survives execve: a launcher started with SIGCHLD ignored would have its children
    reaped by the kernel (exit statuses lost, the zygote's pid free for reuse while it is spared)."""
    previous = signal.signal(signal.SIGCHLD, signal.SIG_IGN)
    try:
        sb = create_sandbox(SandboxConfig(allow_shell=True))
        try:
            first = bounded(lambda: sb.exec(["sh", "-c", "exit 3"]), 20)  # bwrap and PID 1 start now
        except BaseException:
            sb.destroy()
            raise
    finally:
        signal.signal(signal.SIGCHLD, previous)
    try:
        assert first.exit_code == 3
        status = sb.exec(["cat", "/proc/1/status"]).stdout
        ignored = int(next(line.split()[1] for line in status.splitlines() if line.startswith("SigIgn:")), 16)
        assert not ignored & (1 << (signal.SIGCHLD - 1))
        sb.write_file("a.txt", b"x")
        search = {"pattern": "*.txt", "base": "/workspace", "max_results": 10}
        assert sb.run_tool("search_files", search, timeout=10) == ["/workspace/a.txt"]
        assert sb.exec(["sh", "-c", "exit 4"]).exit_code == 4
    finally:
        sb.destroy()


@requires_bwrap
def test_an_oversized_command_line_is_a_failed_command_not_a_broken_sandbox(sandbox):
    """argv + env larger than one request can carry: the agent's command fails (as execve's E2BIG
    would), the sandbox is not closed and the case does not end in a sandbox error."""
    sandbox.exec(["true"])
    pid = sandbox._launcher.proc.pid
    count = sandbox._launcher.sock.getsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF) // 100_000 + 2
    result = sandbox.exec(["sh", "-c", "echo $#", "sh", *(str(i) * 100_000 for i in range(count))])  # distinct strings
    assert result.exit_code == 127 and result.stdout == ""
    assert sandbox.exec(["echo", "still here"]).stdout == "still here\n"
    assert sandbox._launcher.proc.pid == pid  # the same bwrap and PID 1


@requires_bwrap
@pytest.mark.parametrize("path", ["/tmp/fill", "/dev/shm/fill"])
def test_tmpfs_is_sized(path):
    sb = create_sandbox(SandboxConfig(allow_shell=True), settings=SandboxSettings(tmp_bytes=16 * MiB))
    try:
        code = f"f = open('{path}', 'wb')\ntry:\n    for _ in range(64): f.write(b'x' * 1048576); f.flush()\nexcept OSError as e: print('full', e.errno)\n"
        assert "full 28" in py(sb, code).stdout  # ENOSPC
        assert py(sb, "open('/dev/evil', 'w')").exit_code != 0
    finally:
        sb.destroy()


@requires_bwrap
@pytest.mark.parametrize("tmpfs", [True, False])
def test_exec_cannot_fill_the_workspace_past_its_cap(tmpfs):
    config = SandboxConfig(allow_shell=True, max_workspace_bytes=8 * MiB)
    sb = create_sandbox(config, settings=SandboxSettings(workspace_tmpfs=tmpfs))
    try:
        code = (
            "import time\n"
            "for i in range(200):\n"
            "    open(f'/workspace/f{i}', 'wb').write(b'x' * 1048576); time.sleep(0.02)\n"
            "print('wrote everything')\n"
        )
        result = py(sb, code, timeout=30)
        assert result.exit_code != 0 and "wrote everything" not in result.stdout
        assert sb.workspace_bytes() <= 8 * MiB + (0 if tmpfs else 16 * MiB)  # fallback: stopped within a poll
        if not tmpfs:
            assert "workspace size limit exceeded" in result.stderr
    finally:
        sb.destroy()


@requires_bwrap
def test_fork_bomb_is_bounded_by_the_cgroup_and_rlimit():
    sb = create_sandbox(SandboxConfig(allow_shell=True, max_processes=16))
    try:
        code = "import os, time\nn = 0\nfor _ in range(100):\n    try:\n        if os.fork() == 0:\n            time.sleep(5); os._exit(0)\n        n += 1\n    except OSError:\n        break\nprint(n)\n"
        assert int(py(sb, code).stdout) < 16
    finally:
        sb.destroy()


# ---------------------------------------------------------------------------- time (item 4)
@requires_bwrap
def test_cancel_stops_a_running_command_within_two_seconds(sandbox):
    sandbox.exec(["true"])
    threading.Timer(0.5, sandbox.abort).start()
    start = time.monotonic()
    result = bounded(lambda: sandbox.exec(["sleep", "30"]), 10)
    assert time.monotonic() - start < 2.5
    assert result.exit_code == 130 and "cancelled" in result.stderr
    assert sandbox.exec(["true"]).exit_code == 130  # a cancelled sandbox runs nothing more


@requires_bwrap
def test_cancel_stops_a_running_data_tool(harness_factory):
    h = harness_factory()
    threading.Timer(0.5, h.sandbox.abort).start()
    start = time.monotonic()
    message = bounded(lambda: h.error("query_json", {"query": "last(range(1e15))", "json": "{}"}), 10)
    assert time.monotonic() - start < 2.5 and message == "jq query cancelled"


@requires_bwrap
def test_deadline_kills_a_command_that_ignores_signals(sandbox):
    code = "import os, signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\nos.fork()\nwhile True: pass\n"
    start = time.monotonic()
    result = bounded(lambda: py(sandbox, code, timeout=1), 10)
    assert result.exit_code == 124 and result.timed_out
    assert time.monotonic() - start < 2.5


@requires_bwrap
def test_deadline_kills_the_whole_sandbox_when_the_launcher_is_stuck(sandbox):
    sandbox.exec(["true"])
    bwrap_pid = sandbox._launcher.proc.pid
    with open(f"/proc/{bwrap_pid}/task/{bwrap_pid}/children") as fh:
        launcher_pid = int(fh.read().split()[0])
    os.kill(launcher_pid, signal.SIGSTOP)  # simulates a launcher that no longer answers
    start = time.monotonic()
    with pytest.raises(EngineError):
        bounded(lambda: sandbox.exec(["sleep", "30"], timeout=1), 10)
    assert time.monotonic() - start < 5
    assert sandbox.exec(["echo", "back"]).stdout == "back\n"  # a fresh launcher


@requires_bwrap
def test_data_tool_deadline(harness_factory, monkeypatch):
    from engine.tools.primitives import query

    monkeypatch.setattr(query, "JQ_TIMEOUT", 1.0)
    start = time.monotonic()
    assert harness_factory().error("query_json", {"query": "[range(1e9)] | length", "json": "{}"}) in (
        "jq query timed out",
        "jq query ran out of memory",
    )
    assert time.monotonic() - start < 4

"""Process isolation with bubblewrap and a long-lived in-sandbox launcher.

Starting bwrap costs ~10 ms per process, so each sandbox starts ONE bwrap running a tiny
Python launcher as PID 1 of the new namespaces. Every exec is a request over a SEQPACKET
socket carrying the stdout/stderr pipe fds (SCM_RIGHTS); the launcher posix_spawns the
command (rlimits are set once on the launcher and inherited), and reports the exit status. As PID 1 it cannot be killed from inside, reaps orphans,
and after each command (or on timeout) kills every other process in the namespace with
kill(-1), so background children never outlive their command.
"""

from __future__ import annotations

import array
import json
import logging
import os
import pwd
import secrets
import select
import shutil
import signal
import socket
import subprocess
import threading
import time

from engine.sandbox.base import OUTPUT_CAP_BYTES, SandboxConfig
from engine.sandbox.env import SANDBOX_PATH
from engine.types import EngineError, ExecResult

log = logging.getLogger(__name__)

SYSTEM_PYTHON = "/usr/bin/python3"
ETC_FILES = (
    "/etc/alternatives",
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/ssl",
    "/etc/ca-certificates",
    "/etc/localtime",
    "/etc/nsswitch.conf",
    "/etc/mime.types",
    "/etc/protocols",
    "/etc/services",
)
NETWORK_ETC_FILES = ("/etc/resolv.conf", "/etc/hosts", "/etc/host.conf", "/etc/gai.conf")

LAUNCHER = r"""
import os, sys, json, socket, signal, resource, array, select, time
fd = int(sys.argv[1])
os.set_inheritable(fd, False)
sock = socket.socket(fileno=fd)
def recv():
    msg, anc, _, _ = sock.recvmsg(1 << 20, socket.CMSG_SPACE(16 * 4))
    fds = array.array("i")
    for level, typ, data in anc:
        if level == socket.SOL_SOCKET and typ == socket.SCM_RIGHTS:
            fds.frombytes(data[: len(data) - len(data) % fds.itemsize])
    for f in fds:
        os.set_inheritable(f, False)
    return msg, list(fds)
def kill_all(main):
    status = None
    for _ in range(2000):
        try:
            os.kill(-1, signal.SIGKILL)
        except ProcessLookupError:
            pass
        while True:
            try:
                pid, st = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return status
            if pid == 0:
                break
            if pid == main:
                status = st
        time.sleep(0.002)
    return status
def reply(obj):
    sock.send(json.dumps(obj).encode())
CPU_HARD = 86400
for name, value in json.loads(sys.argv[2]):
    resource.setrlimit(getattr(resource, name), (value, value))
resource.setrlimit(resource.RLIMIT_CPU, (CPU_HARD, CPU_HARD))
reply({"ready": True})
while True:
    msg, fds = recv()
    if not msg:
        os._exit(0)
    req = json.loads(msg)
    if len(fds) != 2:
        for f in fds:
            os.close(f)
        reply({"error": "bad request"})
        continue
    out_fd, err_fd = fds
    argv, env = req["argv"], req["env"]
    exe = argv[0]
    if "/" not in exe:
        for d in env.get("PATH", "").split(":"):
            cand = (d or ".") + "/" + exe
            if os.access(cand, os.X_OK) and not os.path.isdir(cand):
                exe = cand
                break
    cpu = int(sum(os.times()[:2])) + 1 + int(req["cpu_seconds"])
    null = os.open("/dev/null", os.O_RDONLY)
    try:
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, CPU_HARD))
        os.chdir(req["cwd"])
        pid = os.posix_spawn(
            exe, argv, env, setsid=True, setsigdef=(signal.SIGPIPE, signal.SIGXFSZ),
            file_actions=[(os.POSIX_SPAWN_DUP2, null, 0), (os.POSIX_SPAWN_DUP2, out_fd, 1), (os.POSIX_SPAWN_DUP2, err_fd, 2)],
        )
        failure = None
    except OSError as exc:
        failure = [type(exc).__name__, exc.errno or 0]
    finally:
        os.chdir("/")
        resource.setrlimit(resource.RLIMIT_CPU, (CPU_HARD, CPU_HARD))
        os.close(null)
        os.close(out_fd)
        os.close(err_fd)
    if failure:
        reply({"exec_error": failure})
        continue
    pidfd = os.pidfd_open(pid)
    status = None
    killed = False
    while status is None:
        ready, _, _ = select.select([sock, pidfd], [], [])
        if pidfd in ready:
            _, status = os.waitpid(pid, 0)
            break
        m, extra = recv()
        for f in extra:
            os.close(f)
        if not m:
            kill_all(pid)
            os._exit(0)
        killed = True
        status = kill_all(pid)
        if status is None:
            _, status = os.waitpid(pid, 0)
    os.close(pidfd)
    kill_all(pid)
    if os.WIFSIGNALED(status):
        code = 128 + os.WTERMSIG(status)
    else:
        code = os.WEXITSTATUS(status)
    reply({"exit": code, "killed": killed})
"""


def bwrap_path() -> str | None:
    return shutil.which("bwrap")


def _sandbox_uid() -> int | None:
    """A per-sandbox host uid so RLIMIT_NPROC counts only this sandbox's processes."""
    if os.geteuid() != 0:
        return None
    while True:
        uid = 200_000 + secrets.randbelow(800_000)
        try:
            pwd.getpwuid(uid)
        except KeyError:
            return uid


def bwrap_argv(config: SandboxConfig, workspace: str, fds: dict[str, int], fd: int, rlimits: list[tuple[str, int]]) -> list[str]:
    """``fds``: passwd and group (pipes with the file content)."""
    argv = [
        bwrap_path() or "bwrap",
        "--unshare-user",
        "--unshare-pid",
        "--unshare-ipc",
        "--unshare-uts",
        "--unshare-cgroup-try",
        "--die-with-parent",
        "--new-session",
        "--as-pid-1",
        "--hostname",
        "sandbox",
        "--ro-bind",
        "/usr",
        "/usr",
    ]
    if not config.allow_network:
        argv.append("--unshare-net")
    for name in ("bin", "sbin", "lib", "lib32", "lib64", "libx32"):
        path = "/" + name
        if os.path.islink(path):
            argv += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            argv += ["--ro-bind", path, path]
    etc = ETC_FILES + (NETWORK_ETC_FILES if config.allow_network else ())
    for path in etc:
        if os.path.exists(path):
            argv += ["--ro-bind", path, path]
    argv += ["--ro-bind-data", str(fds["passwd"]), "/etc/passwd"]
    argv += ["--ro-bind-data", str(fds["group"]), "/etc/group"]
    argv += [
        "--proc", "/proc",
        "--dev", "/dev",
        "--tmpfs", "/tmp",  # noqa: S108 - a private tmpfs inside the sandbox
        "--tmpfs", "/run",
        "--bind", workspace, "/workspace",
        "--remount-ro", "/",
        "--chdir", "/workspace",
        "--clearenv",
        "--setenv", "PATH", SANDBOX_PATH,
        "--",
        SYSTEM_PYTHON, "-I", "-S", "-c", LAUNCHER, str(fd), json.dumps(rlimits),
    ]  # fmt: skip
    return argv


class Launcher:
    """Host side of one sandbox's launcher process."""

    def __init__(self, config: SandboxConfig, workspace: str, private_dir: str, uid: int | None, rlimits: list[tuple[str, int]]):
        self.config = config
        self.rlimits = rlimits
        self.workspace = workspace
        self.private_dir = private_dir
        self.uid = uid
        self.proc: subprocess.Popen[bytes] | None = None
        self.sock: socket.socket | None = None
        self.lock = threading.Lock()

    def _start(self) -> None:
        parent, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        fds = {}
        for name in ("passwd", "group"):
            r, w = os.pipe()
            with open(os.path.join(self.private_dir, name), "rb") as fh:
                os.write(w, fh.read())
            os.close(w)
            fds[name] = r
        kwargs: dict = {}
        if self.uid is not None:
            kwargs.update(user=self.uid, group=self.uid, extra_groups=[])
        try:
            self.proc = subprocess.Popen(
                bwrap_argv(self.config, self.workspace, fds, child.fileno(), self.rlimits),
                pass_fds=(child.fileno(), *fds.values()),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                env={"PATH": SANDBOX_PATH, "LANG": "C.UTF-8"},
                cwd="/",
                start_new_session=True,
                **kwargs,
            )
        finally:
            child.close()
            for f in fds.values():
                os.close(f)
        self.sock = parent
        parent.settimeout(10)
        try:
            ready = parent.recv(4096)
        except OSError:
            ready = b""
        parent.settimeout(None)
        if not ready:
            err = b""
            if self.proc.stderr is not None:
                self.proc.kill()
                err = self.proc.stderr.read()[:500]
            self.close()
            log.error("sandbox launcher failed to start: %s", err.decode(errors="replace"))
            raise EngineError("sandbox launcher failed to start")
        assert self.proc.stderr is not None
        self.proc.stderr.close()

    def close(self) -> None:
        if self.sock is not None:
            self.sock.close()
            self.sock = None
        if self.proc is not None:
            if self.proc.poll() is None:
                try:
                    os.killpg(self.proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                try:
                    self.proc.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    pass
            self.proc = None

    def run(self, argv: list[str], cwd: str, env: dict[str, str], timeout: float) -> ExecResult:
        with self.lock:
            if self.sock is None or self.proc is None or self.proc.poll() is not None:
                self.close()
                self._start()
            return self._run(argv, cwd, env, timeout)

    def _run(self, argv: list[str], cwd: str, env: dict[str, str], timeout: float) -> ExecResult:
        assert self.sock is not None
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        request = json.dumps({"argv": argv, "cwd": cwd, "env": env, "cpu_seconds": int(timeout) + 5}).encode()
        try:
            self.sock.sendmsg([request], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [out_w, err_w]))])
        except OSError as exc:
            for f in (out_r, out_w, err_r, err_w):
                os.close(f)
            self.close()
            raise EngineError("sandbox launcher is not reachable") from exc
        finally:
            pass
        os.close(out_w)
        os.close(err_w)
        return collect(self.sock, out_r, err_r, timeout, self)


def collect(sock: socket.socket, out_r: int, err_r: int, timeout: float, launcher: Launcher) -> ExecResult:
    buffers = {out_r: bytearray(), err_r: bytearray()}
    truncated = {out_r: False, err_r: False}
    open_fds = {out_r, err_r}
    deadline = time.monotonic() + timeout
    reply: dict | None = None
    timed_out = False
    backstop = None
    try:
        while open_fds or reply is None:
            now = time.monotonic()
            if not timed_out and now >= deadline and reply is None:
                timed_out = True
                sock.send(b'{"kill": true}')
                backstop = now + 10
            if backstop is not None and now >= backstop:
                launcher.close()
                raise EngineError("sandbox launcher did not stop a timed-out command")
            wait = max(0.0, (backstop or deadline) - now) if reply is None else 5.0
            watch = list(open_fds) + ([sock] if reply is None else [])
            ready, _, _ = select.select(watch, [], [], wait)
            if not ready and reply is not None:
                break  # pipes held open past the command's end: give up on them
            for item in ready:
                if item is sock:
                    data = sock.recv(1 << 16)
                    if not data:
                        launcher.close()
                        raise EngineError("sandbox launcher exited unexpectedly")
                    reply = json.loads(data)
                    continue
                chunk = os.read(item, 1 << 16)
                if not chunk:
                    open_fds.discard(item)
                    continue
                buf = buffers[item]
                room = OUTPUT_CAP_BYTES - len(buf)
                if room > 0:
                    buf += chunk[:room]
                if len(chunk) > room:
                    truncated[item] = True
    finally:
        os.close(out_r)
        os.close(err_r)
    assert reply is not None
    stderr = buffers[err_r]
    if "exec_error" in reply:
        name, code = reply["exec_error"]
        exit_code = 126 if code in (13, 8) else 127
        msg = "command not found" if exit_code == 127 else "permission denied"
        return ExecResult(exit_code=exit_code, stdout="", stderr=f"exec failed: {msg}")
    exit_code = 124 if timed_out else int(reply["exit"])
    return ExecResult(
        exit_code=exit_code,
        stdout=buffers[out_r].decode("utf-8", "replace"),
        stderr=stderr.decode("utf-8", "replace") + ("\ncommand timed out" if timed_out else ""),
        timed_out=timed_out,
        stdout_truncated=truncated[out_r],
        stderr_truncated=truncated[err_r],
    )


def run_unisolated(argv: list[str], cwd: str, env: dict[str, str], timeout: float, rlimits: list[tuple[str, int]]) -> ExecResult:
    """Dev-only fallback (SANDBOX_ALLOW_UNISOLATED=1): rlimits and a process group, no namespaces."""
    import resource

    def preexec() -> None:
        for name, value in rlimits:
            resource.setrlimit(getattr(resource, name), (value, value))

    try:
        proc = subprocess.Popen(
            argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, start_new_session=True, preexec_fn=preexec,
        )  # fmt: skip
    except FileNotFoundError:
        return ExecResult(exit_code=127, stderr="exec failed: command not found")
    except PermissionError:
        return ExecResult(exit_code=126, stderr="exec failed: permission denied")
    try:
        out, err = proc.communicate(timeout=timeout)
        code = proc.returncode if proc.returncode >= 0 else 128 - proc.returncode
        timed_out = False
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        code, timed_out = 124, True
    return ExecResult(
        exit_code=code,
        stdout=out[:OUTPUT_CAP_BYTES].decode("utf-8", "replace"),
        stderr=err[:OUTPUT_CAP_BYTES].decode("utf-8", "replace"),
        timed_out=timed_out,
        stdout_truncated=len(out) > OUTPUT_CAP_BYTES,
        stderr_truncated=len(err) > OUTPUT_CAP_BYTES,
    )

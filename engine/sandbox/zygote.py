"""The data tools' zygote: a helper the native launcher (``launcher.c``, PID 1) starts inside the
sandbox on the first data tool, under the sandbox's system python (``-I -S``). Never PID 1: it
refuses to run as one; PID 1 is always the native launcher (docs/engine-safety.md "The native
launcher").

jq, SQLite and the searches need Python bindings, so data tools cannot run in the C launcher. The
zygote imports a tool's library once (``agentclash_toolhost.preload``) and forks a child per call
(``toolhost.py``), so a call costs a fork, not an interpreter start. It imports no pure-Python
module (``json``, ``socket``, ``signal``, ``ctypes`` cost ~20 ms together; ``_socket``,
``_signal``, ``_ctypes``, ``marshal``, ``select`` and ``resource`` ~1 ms), since its start is on
the path of a sandbox's first data tool.

argv: ``FD CONFIG_HEX``: the SEQPACKET socket to the native launcher (its fd 3) and the hex of a
``marshal``-encoded config (``rss_cap``, ``lib``). Requests come from the host, relayed unchanged
by the native launcher (``T``/``K`` + these bytes); only the host writes them, and replies go back
as JSON, which the host parses strictly (it never ``marshal.loads`` what the sandbox sends):

- ``{"op": "tool", "name", "env", "cpu_seconds"}`` + ``[stdin, stdout, stderr]``: fork, and run
  ``agentclash_toolhost.main(name)`` in the child with the sandbox's clean environment.
- ``{"kill": true}`` while a call runs: stop it now (timeout or cancel on the host).
- ``b"ping"`` (not marshal) between calls, from the native launcher after agent commands:
  answered ``{"ready": true}`` (a zygote that does not answer is killed and replaced).

Replies: ``{"ready": true}`` once, then per call ``{"exit", "killed", "oom"}`` or
``{"exec_error": [name, errno]}``.

Invariants (docs/engine-safety.md):

- **Non-dumpable**, so processes of the same uid cannot ptrace it, open ``/proc/PID/mem`` or steal
  its fds; the seccomp filter denies ptrace to everyone anyway. The ``prctl`` is checked with
  ``PR_GET_DUMPABLE``: a zygote that stays dumpable refuses to start.
- After every call it kills every other process of the namespace (``kill(-1)`` spares init and
  itself), so nothing a data tool starts outlives its call.
- Without a cgroup (``rss_cap`` set) it sums the resident memory of the sandbox's processes every
  100 ms during a call and kills them all above the cap.
"""

import _ctypes
import _signal as signal  # type: ignore[import-not-found]
import _socket
import marshal
import os
import resource
import select
import sys
import time

PR_GET_DUMPABLE = 3
PR_SET_DUMPABLE = 4
CPU_HARD = 86400
WATCH_INTERVAL = 0.1
PAGE = os.sysconf("SC_PAGE_SIZE")
INT_SIZE = 4


def set_non_dumpable() -> None:
    """``prctl(PR_SET_DUMPABLE, 0)`` through ``_ctypes`` (``ctypes`` itself costs ~4 ms to import)."""
    if hasattr(_ctypes, "call_function") and hasattr(_ctypes, "dlsym"):
        prctl = _ctypes.dlsym(_ctypes.dlopen(None, 0), "prctl")  # type: ignore[arg-type]  # None: the program itself

        def call(*args: int) -> int:
            return int(_ctypes.call_function(prctl, args))
    else:  # another CPython without the private helpers: the public (slower) module
        import ctypes

        call = ctypes.CDLL(None).prctl
    call(PR_SET_DUMPABLE, 0, 0, 0, 0)
    if call(PR_GET_DUMPABLE, 0, 0, 0, 0) != 0:
        raise OSError("prctl(PR_SET_DUMPABLE) failed")


def _reply_bytes(obj: dict[str, object]) -> bytes:
    """JSON for the few reply shapes (bools, ints, one ``[name, errno]`` list); no ``json`` import."""
    parts = []
    for key, value in obj.items():
        if isinstance(value, bool):
            text = "true" if value else "false"
        elif isinstance(value, int):
            text = str(value)
        elif isinstance(value, (list, tuple)) and len(value) == 2:
            name = "".join(c for c in str(value[0]) if c.isascii() and (c.isalnum() or c == "_"))
            text = f'["{name}", {int(value[1])}]'
        else:
            raise TypeError(key)
        parts.append(f'"{key}": {text}')
    return ("{" + ", ".join(parts) + "}").encode()


def _resident(path: str) -> int:
    """Resident pages from a ``statm`` file (0 if unreadable)."""
    try:
        with open(path, "rb") as fh:
            return int(fh.read().split()[1])
    except (OSError, ValueError, IndexError):
        return 0


class Zygote:
    def __init__(self, fd: int, config: dict[str, object]) -> None:
        os.set_inheritable(fd, False)
        self.sock = _socket.socket(fileno=fd)
        rss_cap = config.get("rss_cap")
        self.rss_cap = int(rss_cap) if isinstance(rss_cap, int) else 0
        lib = config.get("lib")
        self.lib = str(lib) if isinstance(lib, str) else ""
        self.toolhost: object = None

    def recv(self) -> tuple[bytes, list[int]]:
        msg, anc, _, _ = self.sock.recvmsg(1 << 20, _socket.CMSG_SPACE(16 * INT_SIZE))
        fds: list[int] = []
        for level, typ, data in anc:
            if level == _socket.SOL_SOCKET and typ == _socket.SCM_RIGHTS:
                fds += memoryview(data[: len(data) - len(data) % INT_SIZE]).cast("i").tolist()
        for f in fds:
            os.set_inheritable(f, False)
        return msg, fds

    def reply(self, obj: dict[str, object]) -> None:
        self.sock.send(_reply_bytes(obj))

    def kill_all(self, main: int) -> int | None:
        """SIGKILL every process of the namespace but init and this one; return ``main``'s wait status if reaped."""
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

    def rss_total(self) -> int:
        total = 0
        for name in os.listdir("/proc"):
            if not name.isdigit() or name == "1":
                continue
            resident = _resident(f"/proc/{name}/statm")
            if not resident:  # a main thread that exited (pthread_exit) reads 0: ask its live threads
                try:
                    tasks = os.listdir(f"/proc/{name}/task")
                except OSError:
                    tasks = []
                for tid in tasks:
                    resident = _resident(f"/proc/{name}/task/{tid}/statm")
                    if resident:
                        break  # threads share one address space: the first live one tells
            total += resident * PAGE
        return total

    # ---------------------------------------------------------------- calls
    def load_toolhost(self, name: str) -> None:
        if self.toolhost is None:
            if self.lib and self.lib not in sys.path:
                sys.path.append(self.lib)  # appended: the read-only lib dir never shadows the stdlib
            import agentclash_toolhost  # type: ignore[import-not-found]

            self.toolhost = agentclash_toolhost
        self.toolhost.preload(name)  # type: ignore[attr-defined]

    def fork_tool(self, req: dict[str, object], fds: list[int]) -> int:
        name = str(req["name"])
        env = {str(k): str(v) for k, v in req["env"].items()}  # type: ignore[attr-defined]
        self.load_toolhost(name)
        pid = os.fork()
        if pid:
            return pid
        code = 70
        try:  # child: a fresh session, only stdin/stdout/stderr, the sandbox's clean environment
            os.setsid()
            for sig in (signal.SIGPIPE, signal.SIGXFSZ, signal.SIGINT, signal.SIGTERM):
                signal.signal(sig, signal.SIG_DFL)
            for target, f in enumerate(fds):
                os.dup2(f, target)
            os.closerange(3, resource.getrlimit(resource.RLIMIT_NOFILE)[0])
            os.environ.clear()
            os.environ.update(env)  # jq's $ENV and every library see only this
            os.chdir("/workspace")
            self.toolhost.main(name)  # type: ignore[attr-defined]
            code = 0
        finally:
            os._exit(code)

    def run(self, req: dict[str, object], fds: list[int]) -> None:
        cpu = int(sum(os.times()[:2])) + 1 + int(str(req.get("cpu_seconds", 60)))
        failure = None
        pid = 0
        try:
            resource.setrlimit(resource.RLIMIT_CPU, (cpu, CPU_HARD))
            pid = self.fork_tool(req, fds)
        except Exception as exc:  # noqa: BLE001 - a bad request must never take the zygote down
            failure = [type(exc).__name__, getattr(exc, "errno", 0) or 0]
        finally:
            resource.setrlimit(resource.RLIMIT_CPU, (CPU_HARD, CPU_HARD))
            for f in fds:
                os.close(f)
        if failure:
            self.reply({"exec_error": failure})
            return
        self.wait(pid)

    def wait(self, pid: int) -> None:
        pidfd = os.pidfd_open(pid)
        status = None
        killed = oom = False
        timeout = WATCH_INTERVAL if self.rss_cap else None
        sock_fd = self.sock.fileno()
        while status is None:
            ready, _, _ = select.select([sock_fd, pidfd], [], [], timeout)
            if pidfd in ready:
                _, status = os.waitpid(pid, 0)
                break
            if sock_fd in ready:
                m, extra = self.recv()
                for f in extra:
                    os.close(f)
                if not m:
                    self.kill_all(pid)
                    os._exit(0)
                killed = True
            elif self.rss_cap and self.rss_total() > self.rss_cap:
                oom = True
            else:
                continue
            status = self.kill_all(pid)
            if status is None:
                _, status = os.waitpid(pid, 0)
        os.close(pidfd)
        self.kill_all(pid)
        code = 128 + os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)
        self.reply({"exit": code, "killed": killed, "oom": oom})

    def serve(self) -> None:
        self.reply({"ready": True})
        while True:
            msg, fds = self.recv()
            if not msg:
                os._exit(0)
            if msg == b"ping" and not fds:  # the native launcher checking on us after an agent command
                self.reply({"ready": True})
                continue
            try:
                req = marshal.loads(msg)  # noqa: S302 - the other end is PID 1, relaying the host's bytes unchanged
            except (ValueError, EOFError, TypeError):
                req = None
            if req == {"kill": True}:
                continue  # the host's deadline raced the command's end: nothing left to stop
            if not isinstance(req, dict) or len(fds) != 3 or req.get("op") != "tool":
                for f in fds:
                    os.close(f)
                self.reply({"exec_error": ["BadRequest", 0]})
                continue
            self.run(req, fds)


def main() -> None:
    if os.getpid() == 1:  # PID 1 is the native launcher's job (kill(-1) as init, the egress relay)
        raise SystemExit("agentclash zygote: never PID 1; the sandbox's PID 1 is the native launcher")
    fd = int(sys.argv[1])
    config = marshal.loads(bytes.fromhex(sys.argv[2]))  # noqa: S302 - written by the host (bwrap.native_command)
    set_non_dumpable()
    # SIG_IGN survives execve: an ignored SIGCHLD would reap the call's child at once
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    resource.setrlimit(resource.RLIMIT_CPU, (CPU_HARD, CPU_HARD))
    zygote = Zygote(fd, config)
    null = os.open("/dev/null", os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 2)
    os.close(null)
    zygote.serve()


if __name__ == "__main__":
    main()

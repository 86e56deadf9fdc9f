"""Process isolation with bubblewrap and a long-lived in-sandbox launcher (host side).

Starting bwrap costs ~10 ms per process, so each sandbox starts ONE bwrap running the native
launcher (``engine/sandbox/launcher.c``, built and trusted by ``native.py``) as PID 1 of new user,
pid, ipc, uts, cgroup and network namespaces; it is the only PID 1 there is, and a sandbox does
not start without it. Every command is a request over a SEQPACKET socket carrying its
stdin/stdout/stderr fds (SCM_RIGHTS); the launcher forks and execs it (``E``), or relays a data
tool (``T``) to its Python zygote (``engine/sandbox/zygote.py``), which forks a toolhost child
(``engine/sandbox/toolhost.py``), and reports the exit status.

Layers (docs/engine-safety.md): per-sandbox host uid, user namespace with ``--disable-userns``,
a seccomp filter (``seccomp.py``), a non-dumpable PID 1, a minimal read-only filesystem with a
sized ``/tmp``, ``/dev/shm`` and ``/run``, rlimits, a cgroup for whole-sandbox memory and process
caps (``cgroup.py``, with the launcher's RSS watchdog as fallback), and a wall-clock deadline
enforced here, on the host: at the deadline (or on :meth:`Launcher.abort`) the launcher is told
to kill everything; if it does not answer within ``KILL_GRACE`` the whole sandbox is killed.

Extension points: :func:`bwrap_argv` takes the extra binds (``egress_dir``); with one the
launcher runs the egress relay as a thread of PID 1 (``egress=`` in :func:`native_command`). A
verification sandbox (``verification.py``) may add read-only binds (:class:`Bind`): the pack's
files, when the sandbox's uid owns every file.
"""

from __future__ import annotations

import array
import contextlib
import dataclasses
import errno
import functools
import importlib.util
import json
import logging
import marshal
import os
import pwd
import resource
import secrets
import select
import shutil
import signal
import socket
import subprocess
import threading
import time
from typing import Any

from engine.net.forwarder import FORWARD_PORT, MAX_FORWARDED_CONNECTIONS
from engine.net.proxy import SANDBOX_SOCKET, SANDBOX_SOCKET_DIR
from engine.sandbox import native, rootfs, seccomp, toolhost
from engine.sandbox import zygote as zygote_module
from engine.sandbox.base import OUTPUT_CAP_BYTES, SandboxConfig, SandboxSettings
from engine.sandbox.cgroup import SandboxCgroup
from engine.sandbox.env import SANDBOX_PATH
from engine.types import EngineError, ExecResult

log = logging.getLogger(__name__)

SYSTEM_PYTHON = "/usr/bin/python3"
SANDBOX_LIB = "/.agentclash/lib"  # read-only: toolhost + jq/re2 bindings (never a writable dir)
NATIVE_LAUNCHER = "/.agentclash/bin/launcher"  # read-only: launcher.c's binary, PID 1 (native.py)
ZYGOTE_SCRIPT = f"{SANDBOX_LIB}/agentclash_zygote.py"  # zygote.py, started by PID 1 for data tools
TOOL_MODULES = ("jq", "re2")
BIN_DIRS = ("bin", "sbin", "lib", "lib32", "lib64", "libx32")
RUN_BYTES = 16 * 1024 * 1024
KILL_GRACE = 2.0  # seconds the launcher gets to stop a command before the sandbox is killed
EXIT_GRACE = 0.25  # seconds the launcher and bwrap get to exit at the channel's end before being killed
START_TIMEOUT = 10.0
KILL_REQUEST = marshal.dumps({"kill": True})  # requests are marshal (host to launcher only)
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
# No resolv.conf: the sandbox has no route to any DNS server; proxied clients send names to the
# egress proxy, which resolves them. /etc/hosts is generated (localhost only).
HOSTS_FILE = "127.0.0.1 localhost\n::1 localhost ip6-localhost ip6-loopback\n"


@functools.cache
def _source(module: Any) -> str:
    """A module's source, read once per process (it is bound into every sandbox)."""
    with open(module.__file__, encoding="utf-8") as fh:
        return fh.read()


@functools.lru_cache(maxsize=4)
def skeleton_entries(native_binary: str | None) -> tuple[rootfs.Entry, ...]:
    """What the root skeleton holds (``rootfs.py``): every mount point ``bwrap_argv`` mounts on,
    the host's ``/bin``-style symlinks, copies of ``ETC_FILES``, the generated ``/etc/hosts``, the
    toolhost and zygote sources, the jq/re2 bindings and the native launcher."""
    Entry = rootfs.Entry
    entries = [Entry(path, "dir") for path in ("/usr", "/proc", "/dev", "/tmp", "/run", "/workspace", "/opt")]  # noqa: S108 - mount points
    for name in BIN_DIRS:
        path = "/" + name
        if os.path.islink(path):
            entries.append(Entry(path, "symlink", os.readlink(path)))
        elif os.path.isdir(path):
            entries.append(Entry(path, "dir"))
    entries += [Entry(path, "copy", path) for path in ETC_FILES if os.path.lexists(path)]
    entries += [Entry("/etc/passwd", "file"), Entry("/etc/group", "file"), Entry("/etc/hosts", "data", HOSTS_FILE.encode())]
    entries.append(Entry(f"{SANDBOX_LIB}/agentclash_toolhost.py", "data", _source(toolhost).encode()))
    entries.append(Entry(ZYGOTE_SCRIPT, "data", _source(zygote_module).encode()))
    entries += [Entry(f"{SANDBOX_LIB}/{name}", "copy", path) for path, name in tool_module_paths()]
    if native_binary:
        entries.append(Entry(NATIVE_LAUNCHER, "exec", native_binary))
    return tuple(entries)


@functools.cache
def bwrap_path() -> str | None:
    return shutil.which("bwrap", path=SANDBOX_PATH)  # never the worker's PATH; looked up once per process


@functools.cache
def bwrap_features(path: str) -> frozenset[str]:
    """The options this bwrap understands (``--disable-userns`` and ``--size`` need ≥ 0.8)."""
    try:
        text = subprocess.run([path, "--help"], capture_output=True, text=True, timeout=10, env={}, check=False).stdout
    except (OSError, subprocess.TimeoutExpired):
        return frozenset()
    return frozenset(word for word in text.split() if word.startswith("--"))


@functools.cache
def tool_module_paths() -> tuple[tuple[str, str], ...]:
    """(host path, name) of the jq and re2 bindings to bind beside the toolhost."""
    found = []
    for name in TOOL_MODULES:
        spec = importlib.util.find_spec(name)
        if spec is None:
            continue
        if spec.submodule_search_locations:
            path = next(iter(spec.submodule_search_locations))
        elif spec.origin:
            path = spec.origin
        else:
            continue
        found.append((path, os.path.basename(path)))
    return tuple(found)


@dataclasses.dataclass(frozen=True, slots=True)
class Bind:
    """A host path bound read-only at ``dest`` in the sandbox (after the workspace is mounted, so
    ``dest`` may lie below it)."""

    source: str
    dest: str

    def argv(self) -> list[str]:
        return ["--ro-bind", self.source, self.dest]


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


class _Spawner:
    """Starts every bwrap from one long-lived thread.

    ``--die-with-parent`` is ``PR_SET_PDEATHSIG``, which fires when the *thread* that forked bwrap
    exits. Forking from this daemon thread ties a sandbox to the worker process instead of to
    whichever thread happened to run its first command.
    """

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.jobs: list[tuple[Any, threading.Event, dict[str, Any]]] = []
        self.wake = threading.Condition(self.lock)
        self.thread: threading.Thread | None = None

    def call(self, fn: Any) -> Any:
        done = threading.Event()
        box: dict[str, Any] = {}
        with self.lock:
            if self.thread is None or not self.thread.is_alive():
                self.thread = threading.Thread(target=self._loop, name="sandbox-spawner", daemon=True)
                self.thread.start()
            self.jobs.append((fn, done, box))
            self.wake.notify()
        done.wait()
        if "error" in box:
            raise box["error"]
        return box["value"]

    def _loop(self) -> None:
        while True:
            with self.lock:
                while not self.jobs:
                    self.wake.wait()
                fn, done, box = self.jobs.pop(0)
            try:
                box["value"] = fn()
            except BaseException as exc:  # noqa: BLE001 - handed to the caller
                box["error"] = exc
            done.set()


_spawner = _Spawner()


@functools.cache
def setpriv_path() -> str | None:
    return shutil.which("setpriv", path=SANDBOX_PATH)  # util-linux; never the worker's PATH


def uid_shim_fd(settings: SandboxSettings, binary: str | None = None) -> int | None:
    """An ``O_PATH`` fd of the native launcher for its ``--as-uid`` mode, trust-checked on the fd
    (``native.open_trusted``), or None when it is not built, not trusted or not executable here (a
    ``noexec`` mount: then ``setpriv``). ``binary``: the path already chosen as PID 1, if any;
    otherwise the built one is looked up (never built here). The caller closes the fd."""
    path = binary or native.launcher_binary(settings.launcher_dir, build_missing=False)
    if not path or not os.access(path, os.X_OK):  # a noexec mount: setpriv instead
        return None
    return native.open_trusted(path)


def as_sandbox_uid(argv: list[str], uid: int, shim_fd: int | None = None) -> tuple[list[str], dict[str, Any]]:
    """Run ``argv`` as the sandbox's own host uid and gid, with no supplementary groups.

    Through the native launcher's ``--as-uid`` mode when ``shim_fd`` (:func:`uid_shim_fd`) is
    given: it is executed as ``/proc/self/fd/N``, so what runs as root is the file checked, not
    what its path names later (the caller passes ``shim_fd`` in ``pass_fds``; the shim marks it
    close-on-exec so it does not reach bwrap). Else through util-linux ``setpriv``, whose dynamic
    start costs ~0.9 ms more CPU. ``Popen(user=...)`` is the last resort: it cannot use ``vfork``,
    so it would copy the whole worker process (page tables of ~100 MB: ~7 ms of CPU per sandbox;
    ``bench/sandbox_bench.py``)."""
    if shim_fd is not None:
        return [f"/proc/self/fd/{shim_fd}", "--as-uid", str(uid), "--", *argv], {}
    setpriv = setpriv_path()
    if setpriv is None:
        return argv, {"user": uid, "group": uid, "extra_groups": []}
    return [setpriv, f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--", *argv], {}


def _data_fd(data: bytes) -> int:
    fd = os.memfd_create("agentclash", os.MFD_CLOEXEC)
    os.write(fd, data)
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


def native_command(fd: int, launch: dict[str, Any], settings: SandboxSettings, *, egress: bool = False) -> list[str]:
    """The native launcher's argv (``launcher.c``): it applies the rlimits itself, hands the data
    tools' zygote (``zygote.py``) the rest of the config and, with ``egress``, relays
    ``127.0.0.1:FORWARD_PORT`` to the egress proxy's socket from a thread of PID 1."""
    limits = [f"{getattr(resource, name)}={int(value)}" for name, value in launch.get("rlimits", [])]
    zygote = {"rss_cap": launch.get("rss_cap", 0), "lib": launch.get("lib", SANDBOX_LIB)}
    python = settings.python or SYSTEM_PYTHON
    relay = [f"egress={FORWARD_PORT},{MAX_FORWARDED_CONNECTIONS},{SANDBOX_SOCKET}"] if egress else []
    return [
        NATIVE_LAUNCHER,
        str(fd),
        str(int(launch.get("rss_cap") or 0)),
        python,
        ZYGOTE_SCRIPT,
        marshal.dumps(zygote).hex(),
        *limits,
        *relay,
    ]


def bwrap_argv(
    config: SandboxConfig,
    workspace: str,
    fds: dict[str, int],
    fd: int,
    launch: dict[str, Any],
    egress_dir: str | None = None,
    *,
    settings: SandboxSettings | None = None,
    native_in_root: bool = False,
    binds: tuple[Bind, ...] = (),
) -> list[str]:
    """``fds``: ``root`` (the root skeleton, O_PATH: ``rootfs.py``; without it every file below
    is bound one by one), ``passwd``, ``group``, ``hosts``, ``toolhost`` (files' content), ``seccomp``,
    optional ``info``/``block`` (cgroup placement), ``lib:<name>`` (O_PATH fds of the tool
    bindings), ``native`` (the launcher's binary, O_PATH) and ``zygote`` (zygote.py's source).
    ``launch``: the launcher's config. ``egress_dir``: the host directory holding this sandbox's
    egress proxy socket (None: no network at all). ``native_in_root``: the skeleton holds the
    native launcher. ``binds``: read-only binds (:class:`Bind`), after the workspace. PID 1 is always
    the native launcher: from the skeleton or the ``native`` fd; without either this raises
    ``ValueError``."""
    settings = settings or SandboxSettings()
    exe = bwrap_path() or "bwrap"
    features = bwrap_features(exe)
    skeleton = "root" in fds  # rootfs.py: mount points, symlinks, /etc copies and tool files in one bind
    argv = [
        *_namespace_args(exe, features, fds),
        *_system_binds(features, fds, skeleton=skeleton),
        *_private_mounts(features, settings, workspace, egress_dir),
        *_opt_tmpfs(features, binds),
        *(arg for bind in binds for arg in bind.argv()),
        *(["--remount-ro", "/opt"] if _opt_tmpfs(features, binds) else []),  # its mount points made, nothing more
        *_sandbox_files(features, fds),
        "--remount-ro", "/",
        "--chdir", "/workspace",
        "--clearenv",
        "--setenv", "PATH", SANDBOX_PATH,
        "--",
    ]  # fmt: skip
    if "native" not in fds and not (skeleton and native_in_root):
        raise ValueError("no native launcher to run as PID 1 (neither a native fd nor a skeleton holding it)")
    return argv + native_command(fd, launch, settings, egress=egress_dir is not None)


def _namespace_args(exe: str, features: frozenset[str], fds: dict[str, int]) -> list[str]:
    """bwrap itself, the namespaces, the seccomp filter and the cgroup placement fds (:func:`bwrap_argv`)."""
    argv = [
        exe,
        "--unshare-user",
        *(["--disable-userns"] if "--disable-userns" in features else []),
        "--unshare-pid",
        "--unshare-ipc",
        "--unshare-uts",
        "--unshare-cgroup-try",
        "--unshare-net",  # always: only lo inside; egress only through the proxy socket
        "--die-with-parent",
        "--new-session",
        "--as-pid-1",
        "--hostname", "sandbox",
        "--seccomp", str(fds["seccomp"]),
    ]  # fmt: skip
    if "info" in fds:
        argv += ["--info-fd", str(fds["info"]), "--block-fd", str(fds["block"])]
    return argv


def _bind_fd(features: frozenset[str], fd: int, dest: str) -> list[str]:
    # bound by fd: what was checked is what is bound, and the sandbox uid need not walk to it
    if "--ro-bind-fd" in features:
        return ["--ro-bind-fd", str(fd), dest]
    return ["--ro-bind", f"/proc/self/fd/{fd}", dest]  # bwrap < 0.5: the same fd through procfs


def _system_binds(features: frozenset[str], fds: dict[str, int], *, skeleton: bool) -> list[str]:
    """The read-only system: the skeleton as ``/`` (or the host's ``/bin``-style symlinks and
    ``ETC_FILES`` one by one), ``/usr``, the ``BIN_DIRS``, and the generated passwd, group and hosts."""
    argv = _bind_fd(features, fds["root"], "/") if skeleton else []
    argv += ["--ro-bind", "/usr", "/usr"]
    for name in BIN_DIRS:
        path = "/" + name
        if os.path.islink(path):
            if not skeleton:
                argv += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            argv += ["--ro-bind", path, path]
    if not skeleton:
        for path in ETC_FILES:
            if os.path.exists(path):
                argv += ["--ro-bind", path, path]
    argv += ["--ro-bind-data", str(fds["passwd"]), "/etc/passwd"]
    argv += ["--ro-bind-data", str(fds["group"]), "/etc/group"]
    if "hosts" in fds:
        argv += ["--ro-bind-data", str(fds["hosts"]), "/etc/hosts"]
    return argv


def _private_mounts(features: frozenset[str], settings: SandboxSettings, workspace: str, egress_dir: str | None) -> list[str]:
    """``/proc``, ``/dev``, the sized tmpfs mounts, the workspace and the egress socket's directory."""

    def tmpfs(dest: str, size: int) -> list[str]:
        return (["--size", str(size)] if "--size" in features else []) + ["--tmpfs", dest]

    return [
        "--proc", "/proc",
        "--dev", "/dev",
        *tmpfs("/dev/shm", settings.tmp_bytes),  # noqa: S108 - the sandbox-private, sized /dev/shm
        "--remount-ro", "/dev",  # device nodes still work; no files can be created there
        *tmpfs("/tmp", settings.tmp_bytes),  # noqa: S108 - a private, sized tmpfs inside the sandbox
        *tmpfs("/run", RUN_BYTES),
        "--bind", workspace, "/workspace",
        *(["--ro-bind", egress_dir, SANDBOX_SOCKET_DIR] if egress_dir else []),
    ]  # fmt: skip


def _opt_tmpfs(features: frozenset[str], binds: tuple[Bind, ...]) -> list[str]:
    """An empty ``/opt`` to hold the mount points of binds below it (a package layer, a sandbox
    template's paths): the root skeleton is read-only, a tmpfs is not."""
    if not any(bind.dest.startswith("/opt/") for bind in binds):
        return []
    return (["--size", str(RUN_BYTES)] if "--size" in features else []) + ["--tmpfs", "/opt"]


def _sandbox_files(features: frozenset[str], fds: dict[str, int]) -> list[str]:
    """The files bound one by one when there is no skeleton: the toolhost, the tool bindings
    (``lib:<name>``), the native launcher and the zygote."""
    argv = ["--ro-bind-data", str(fds["toolhost"]), f"{SANDBOX_LIB}/agentclash_toolhost.py"] if "toolhost" in fds else []
    for key, value in fds.items():
        dest = f"{SANDBOX_LIB}/{key[4:]}" if key.startswith("lib:") else NATIVE_LAUNCHER if key == "native" else None
        if dest is not None:
            argv += _bind_fd(features, value, dest)
    if "zygote" in fds:
        argv += ["--ro-bind-data", str(fds["zygote"]), ZYGOTE_SCRIPT]
    return argv


def encode_exec(argv: list[str], cwd: str, env: dict[str, str], cpu_seconds: int) -> bytes | None:
    """The native launcher's ``exec`` request; None when a string cannot be passed to ``execve``
    (an embedded NUL, or ``=`` in a variable's name): the fields are NUL-separated, so a NUL would
    shift every later field (an argument could become an environment variable)."""
    names = [os.fsencode(k) for k in env]
    strings = [os.fsencode(cwd), *(os.fsencode(a) for a in argv), *names, *(os.fsencode(v) for v in env.values())]
    if not argv or any(b"\0" in item for item in strings) or any(not k or b"=" in k for k in names):
        return None
    fields = [
        str(cpu_seconds).encode(),
        os.fsencode(cwd),
        str(len(argv)).encode(),
        *(os.fsencode(a) for a in argv),
        str(len(env)).encode(),
        *(os.fsencode(k) + b"=" + os.fsencode(v) for k, v in env.items()),
    ]
    return b"E" + b"\0".join(fields) + b"\0"


@dataclasses.dataclass(slots=True)
class Outcome:
    """What one launcher command produced (bytes; ``LocalSandbox`` turns it into a result)."""

    exit_code: int
    stdout: bytes = b""
    stderr: bytes = b""
    stdout_truncated: bool = False
    stderr_truncated: bool = False
    timed_out: bool = False
    cancelled: bool = False
    out_of_memory: bool = False
    exec_error: int | None = None  # errno of a failed spawn

    def to_exec_result(self) -> ExecResult:
        if self.exec_error is not None:
            exit_code = 126 if self.exec_error in (13, 8) else 127
            msg = "command not found" if exit_code == 127 else "permission denied"
            return ExecResult(exit_code=exit_code, stdout="", stderr=f"exec failed: {msg}")
        stderr = self.stderr.decode("utf-8", "replace")
        exit_code = self.exit_code
        for flag, note, code in (
            (self.timed_out, "command timed out", 124),
            (self.cancelled, "command cancelled", 130),
            (self.out_of_memory, "killed: the sandbox ran out of memory", 137),
        ):
            if flag:
                stderr += ("\n" if stderr else "") + note
                exit_code = code
        return ExecResult(
            exit_code=exit_code,
            stdout=self.stdout.decode("utf-8", "replace"),
            stderr=stderr,
            timed_out=self.timed_out,
            stdout_truncated=self.stdout_truncated,
            stderr_truncated=self.stderr_truncated,
        )


class Launcher:
    """Host side of one sandbox's launcher process."""

    def __init__(
        self,
        config: SandboxConfig,
        workspace: str,
        private_dir: str,
        uid: int | None,
        rlimits: list[tuple[str, int]],
        *,
        settings: SandboxSettings | None = None,
        cgroup: SandboxCgroup | None = None,
    ):
        self.config = config
        self.rlimits = rlimits
        self.workspace = workspace
        self.private_dir = private_dir
        self.uid = uid
        self.settings = settings or SandboxSettings()
        self.cgroup = cgroup
        self.egress_dir: str | None = None  # set by the sandbox when it runs an egress proxy
        self.binds: tuple[Bind, ...] = ()  # read-only binds of a verification sandbox (verification.py)
        self.proc: subprocess.Popen[bytes] | None = None
        self.sock: socket.socket | None = None
        self.lock = threading.Lock()
        self.aborted = threading.Event()
        self._wake_r, self._wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        self.watch: Any = None  # optional callable run every WATCH_INTERVAL during a command
        self.commands = 0  # requests sent to the launcher (a warm sandbox is handed out only at 0)
        self.native: str | None = None  # the native launcher's binary, PID 1 (set at each start)

    # ------------------------------------------------------------------ lifecycle
    def _native_binary(self) -> str:
        """The native launcher to start as PID 1 (built on first use if missing); there is no other
        PID 1, so without a trusted one the sandbox does not start (the reason is in the log)."""
        try:
            return native.require_binary(self.settings.launcher_dir)
        except native.LauncherUnavailable:
            raise EngineError("the native sandbox launcher is unavailable (see the worker log; make setup builds it)") from None

    def _skeleton_fd(self) -> int | None:
        """The root skeleton (``rootfs.py``) for this sandbox, opened and checked; None: bind each file."""
        path = rootfs.skeleton_path(self.settings.launcher_dir or native.DEFAULT_DIR, skeleton_entries(self.native))
        return rootfs.open_skeleton(path) if path else None

    def _fds(self) -> dict[str, int]:
        fds = {}
        assert self.native is not None
        native_fd = native.open_trusted(self.native)  # checked again on its fd: what bwrap binds or the skeleton copies
        if native_fd is None:
            log.error("native sandbox launcher at %s changed after its trust check; the sandbox does not start", self.native)
            raise EngineError("the native sandbox launcher is no longer trusted (see the worker log)")
        try:
            root = self._skeleton_fd()  # its copy of the launcher is checked on the fd it reads (rootfs.py)
        except BaseException:
            os.close(native_fd)
            raise
        if root is not None:
            fds["root"] = root
            os.close(native_fd)
        else:
            fds["native"] = native_fd
        for name in ("passwd", "group"):
            with open(os.path.join(self.private_dir, name), "rb") as fh:
                fds[name] = _data_fd(fh.read())
        fds["seccomp"] = seccomp.filter_fd(deny_unaccounted_memory=self.cgroup is None)
        if root is not None:
            return fds
        fds["hosts"] = _data_fd(HOSTS_FILE.encode())
        fds["toolhost"] = _data_fd(_source(toolhost).encode())
        for path, name in tool_module_paths():
            with contextlib.suppress(OSError):
                fds["lib:" + name] = os.open(path, os.O_PATH | os.O_CLOEXEC)
        fds["zygote"] = _data_fd(_source(zygote_module).encode())
        return fds

    def _start(self) -> None:
        parent, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            self.native = self._native_binary()
            fds = self._fds()
        except BaseException:
            parent.close()
            child.close()
            raise
        info_r = block_w = -1
        if self.cgroup is not None:
            info_r, fds["info"] = os.pipe()
            fds["block"], block_w = os.pipe()
        launch = {"rlimits": self.rlimits, "rss_cap": 0 if self.cgroup is not None else self.config.memory_bytes, "lib": SANDBOX_LIB}
        kwargs: dict[str, Any] = {}
        argv = bwrap_argv(
            self.config, self.workspace, fds, child.fileno(), launch, self.egress_dir,
            settings=self.settings, native_in_root="root" in fds, binds=self.binds,
        )  # fmt: skip
        shim_fd = None  # its own fd, not fds["native"]: bwrap need not get that one
        try:
            if self.uid is not None:
                shim_fd = uid_shim_fd(self.settings, self.native)
                argv, kwargs = as_sandbox_uid(argv, self.uid, shim_fd)
            self.proc = _spawner.call(
                lambda: subprocess.Popen(
                    argv,
                    pass_fds=(child.fileno(), *fds.values(), *(() if shim_fd is None else (shim_fd,))),
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.PIPE,
                    env={"PATH": SANDBOX_PATH, "LANG": "C.UTF-8"},
                    cwd="/",
                    start_new_session=True,
                    **kwargs,
                )
            )
        finally:
            child.close()
            for f in fds.values():
                os.close(f)
            if shim_fd is not None:
                os.close(shim_fd)
        self.sock = parent
        try:
            if self.cgroup is not None:
                self._enter_cgroup(info_r, block_w)
            ready = self._recv_ready()
        finally:
            for f in (info_r, block_w):
                if f >= 0:
                    os.close(f)
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

    def _enter_cgroup(self, info_r: int, block_w: int) -> None:
        """Move the launcher into the sandbox's cgroup before it runs (bwrap waits on ``block``)."""
        assert self.cgroup is not None
        data = b""
        deadline = time.monotonic() + START_TIMEOUT
        while b"child-pid" not in data or not data.rstrip().endswith(b"}"):
            ready, _, _ = select.select([info_r], [], [], max(0.0, deadline - time.monotonic()))
            chunk = os.read(info_r, 4096) if ready else b""
            if not chunk:
                break
            data += chunk
        try:
            pid = int(json.loads(data)["child-pid"])
            self.cgroup.add(pid)
        except (ValueError, KeyError, OSError) as exc:
            err = b""
            if self.proc is not None and self.proc.stderr is not None and self.proc.poll() is not None:
                err = self.proc.stderr.read()[:500]  # bwrap exited before its child started: say why
            log.error("could not move the sandbox launcher into its cgroup: %s %s", exc, err.decode(errors="replace"))
            self.close(graceful=False)  # bwrap waits on its block fd: it would never exit
            raise EngineError("sandbox launcher failed to start") from None
        os.write(block_w, b"1")

    def _recv_ready(self) -> bool:
        assert self.sock is not None
        self.sock.settimeout(START_TIMEOUT)
        try:
            return bool(self.sock.recv(4096))
        except OSError:
            return False
        finally:
            self.sock.settimeout(None)

    def close(self, *, graceful: bool = True) -> None:
        """Close the channel and end the sandbox. ``graceful``: the launcher exits by itself at the
        channel's end (killing what runs) and bwrap reaps it, so its CPU is accounted to this
        process like any child's; whatever is left after ``EXIT_GRACE`` is killed."""
        if self.sock is not None:
            self.sock.close()
            self.sock = None
        if self.proc is not None:
            if graceful and self.proc.poll() is None:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    self.proc.wait(timeout=EXIT_GRACE)
            if self.proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.proc.pid, signal.SIGKILL)
                if self.cgroup is not None:
                    self.cgroup.kill()
                with contextlib.suppress(subprocess.TimeoutExpired):
                    self.proc.wait(timeout=5)
            self.proc = None

    def dispose(self) -> None:
        self.close()
        for f in (self._wake_r, self._wake_w):
            with contextlib.suppress(OSError):
                os.close(f)
        self._wake_r = self._wake_w = -1

    def _ensure_running(self) -> None:
        if self.sock is None or self.proc is None or self.proc.poll() is not None:
            self.close()
            self._start()

    def prestart(self) -> None:
        """Start bwrap and the launcher now, before any command (a warm sandbox, ``pool.py``)."""
        with self.lock:
            self._ensure_running()

    def pristine(self) -> bool:
        """Started, alive, and no command or data tool has run in it yet."""
        return self.commands == 0 and self.sock is not None and self.proc is not None and self.proc.poll() is None

    def abort(self) -> None:
        """Stop the running command now and refuse new ones (thread-safe: the cancel path)."""
        self.aborted.set()
        with contextlib.suppress(OSError):
            os.write(self._wake_w, b"x")

    # ------------------------------------------------------------------ commands
    def run(
        self,
        argv: list[str] | None,
        cwd: str,
        env: dict[str, str],
        timeout: float,
        *,
        tool: str | None = None,
        stdin: bytes | None = None,
        output_cap: int = OUTPUT_CAP_BYTES,
    ) -> Outcome:
        """Run ``argv`` (or the data tool ``tool``) and wait for it, at most ``timeout`` seconds."""
        with self.lock:
            if self.aborted.is_set():
                return Outcome(exit_code=130, cancelled=True)
            self._ensure_running()
            self.commands += 1
            assert self.sock is not None
            payload = self._request(argv, cwd, env, int(timeout) + 5, tool)
            if payload is None:  # what execve cannot take (a NUL, "=" in a name): a failed command
                return Outcome(exit_code=127, exec_error=0)
            out_r, out_w = os.pipe()
            err_r, err_w = os.pipe()
            in_fd = _data_fd(stdin or b"")
            try:
                self.sock.sendmsg([payload], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [in_fd, out_w, err_w]))])
            except OSError as exc:
                for f in (out_r, err_r):
                    os.close(f)
                if exc.errno == errno.EMSGSIZE:  # argv + env past what one request carries (~200 KB): the
                    return Outcome(exit_code=127, exec_error=errno.E2BIG)  # agent's doing, not a broken sandbox
                self.close()
                raise EngineError("sandbox launcher is not reachable") from exc
            finally:
                for f in (in_fd, out_w, err_w):
                    os.close(f)
            return self._collect(out_r, err_r, timeout, output_cap)

    def _request(self, argv: list[str] | None, cwd: str, env: dict[str, str], cpu_seconds: int, tool: str | None) -> bytes | None:
        """The request for the launcher: an ``exec``'s counted ``E`` fields (None: what ``execve``
        cannot take), or ``T`` + the ``marshal`` request of a data tool, which it relays to its zygote."""
        if not tool:
            return encode_exec(list(argv or []), cwd, env, cpu_seconds)
        return b"T" + marshal.dumps({"op": "tool", "name": tool, "cwd": cwd, "env": env, "cpu_seconds": cpu_seconds})

    def _collect(self, out_r: int, err_r: int, timeout: float, output_cap: int) -> Outcome:
        sock = self.sock
        assert sock is not None
        sock_fd = sock.fileno()
        deadline = time.monotonic() + timeout
        oom_before = self.cgroup.oom_kills() if self.cgroup is not None else 0
        state = _Collecting(out_r, err_r, output_cap, deadline, next_watch=time.monotonic() + WATCH_INTERVAL)
        try:
            while state.open_fds or state.reply is None:
                now = time.monotonic()
                if state.stop is None and state.reply is None:
                    state.stop = self._stop_reason(state, now)
                    if state.stop is not None:
                        sock.send(b"K" + KILL_REQUEST)
                        state.backstop = now + KILL_GRACE
                if state.backstop is not None and state.reply is None and now >= state.backstop:
                    self.close(graceful=False)  # the launcher did not stop it: kill the whole sandbox
                    if state.stop == "cancel":
                        return Outcome(exit_code=130, cancelled=True)
                    raise EngineError("sandbox launcher did not stop a command; the sandbox was killed")
                watch = list(state.open_fds) + ([sock_fd, self._wake_r] if state.reply is None else [])
                ready, _, _ = select.select(watch, [], [], self._wait(state, now))
                if not ready and state.reply is not None:
                    break  # pipes held open past the command's end: give up on them
                for item in ready:
                    if item == sock_fd:
                        data = sock.recv(1 << 16)
                        if not data:
                            return self._launcher_gone(oom_before)
                        state.reply = json.loads(data)
                    elif item == self._wake_r:
                        with contextlib.suppress(BlockingIOError):
                            os.read(self._wake_r, 64)
                    else:
                        state.read(item)
        finally:
            os.close(out_r)
            os.close(err_r)
        return self._outcome(state, oom_before)

    def _stop_reason(self, state: _Collecting, now: float) -> str | None:
        """Why the running command is to be stopped now (``cancel``, ``timeout``, ``watch``), or None."""
        if self.aborted.is_set():
            return "cancel"
        if now >= state.deadline:
            return "timeout"
        if self.watch is not None and now >= state.next_watch:
            state.next_watch = now + WATCH_INTERVAL
            if self.watch():
                return "watch"
        return None

    def _wait(self, state: _Collecting, now: float) -> float:
        """How long to wait for the pipes, the reply or a wake-up before looking at the clock again."""
        if state.reply is not None:
            return 1.0
        wait = (state.backstop if state.backstop is not None else state.deadline) - now
        if self.watch is not None and state.stop is None:
            wait = min(wait, state.next_watch - now)
        return max(0.0, wait)

    def _launcher_gone(self, oom_before: int) -> Outcome:
        """The launcher closed the channel mid-command: the sandbox ran out of memory, or it is broken."""
        self.close()
        if self.cgroup is not None and self.cgroup.oom_kills() > oom_before:
            return Outcome(exit_code=137, out_of_memory=True)
        raise EngineError("sandbox launcher exited unexpectedly")

    def _outcome(self, state: _Collecting, oom_before: int) -> Outcome:
        """What the command produced: the launcher's reply and the pipes' output."""
        reply = state.reply
        assert reply is not None
        if "exec_error" in reply:
            return Outcome(exit_code=127, exec_error=int(reply["exec_error"][1]))
        oom = bool(reply.get("oom")) or (self.cgroup is not None and self.cgroup.oom_kills() > oom_before)
        return Outcome(
            exit_code=int(reply["exit"]),
            stdout=bytes(state.buffers[state.out_r]),
            stderr=bytes(state.buffers[state.err_r]),
            stdout_truncated=state.truncated[state.out_r],
            stderr_truncated=state.truncated[state.err_r],
            timed_out=state.stop == "timeout",
            cancelled=state.stop == "cancel",
            out_of_memory=oom,
        )


@dataclasses.dataclass(slots=True)
class _Collecting:
    """One command's output and state while :meth:`Launcher._collect` waits for it."""

    out_r: int
    err_r: int
    output_cap: int
    deadline: float
    next_watch: float
    reply: dict[str, Any] | None = None
    stop: str | None = None  # "timeout" | "cancel" | "watch"
    backstop: float | None = None  # when the launcher's KILL_GRACE to stop the command ends
    buffers: dict[int, bytearray] = dataclasses.field(init=False)
    truncated: dict[int, bool] = dataclasses.field(init=False)
    open_fds: set[int] = dataclasses.field(init=False)

    def __post_init__(self) -> None:
        self.buffers = {self.out_r: bytearray(), self.err_r: bytearray()}
        self.truncated = {self.out_r: False, self.err_r: False}
        self.open_fds = {self.out_r, self.err_r}

    def read(self, fd: int) -> None:
        """Read what the pipe ``fd`` holds, keeping at most ``output_cap`` bytes; EOF closes it here."""
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            self.open_fds.discard(fd)
            return
        buf = self.buffers[fd]
        room = self.output_cap - len(buf)
        if room > 0:
            buf += chunk[:room]
        if len(chunk) > room:
            self.truncated[fd] = True


WATCH_INTERVAL = 0.25


def run_unisolated(
    argv: list[str], cwd: str, env: dict[str, str], timeout: float, rlimits: list[tuple[str, int]], stdin: bytes | None = None
) -> Outcome:
    """Development only (``SandboxSettings.allow_unisolated``): rlimits and a process group, no namespaces."""
    import resource

    def preexec() -> None:
        for name, value in rlimits:
            resource.setrlimit(getattr(resource, name), (value, value))

    try:
        proc = subprocess.Popen(
            argv, cwd=cwd, env=env, stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True, preexec_fn=preexec,
        )  # fmt: skip
    except FileNotFoundError:
        return Outcome(exit_code=127, exec_error=2)
    except PermissionError:
        return Outcome(exit_code=126, exec_error=13)
    try:
        out, err = proc.communicate(input=stdin, timeout=timeout)
        code = proc.returncode if proc.returncode >= 0 else 128 - proc.returncode
        timed_out = False
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        code, timed_out = 124, True
    return Outcome(
        exit_code=code,
        stdout=out[:OUTPUT_CAP_BYTES],
        stderr=err[:OUTPUT_CAP_BYTES],
        timed_out=timed_out,
        stdout_truncated=len(out) > OUTPUT_CAP_BYTES,
        stderr_truncated=len(err) > OUTPUT_CAP_BYTES,
    )

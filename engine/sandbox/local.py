"""LocalSandbox: a per-case host directory seen by the agent as ``/workspace``."""

from __future__ import annotations

import contextlib
import errno
import json
import logging
import os
import shutil
import stat
import sys
import threading
import uuid
from collections.abc import Callable
from typing import Any

from engine.net.guard import Resolver
from engine.net.proxy import EgressAttempt, EgressContent, EgressProxy, Inspector, proxy_env
from engine.net.vault_mock import DENY_ALL, VaultMock
from engine.sandbox import fs, mounts, native, rootfs, stale, toolhost
from engine.sandbox.base import (
    WORKSPACE,
    FileTooLargeError,
    IsolationUnavailableError,
    SandboxConfig,
    SandboxSettings,
    ShellNotAllowedError,
    ToolRunError,
    WorkspaceFullError,
    WorkspacePathError,
)
from engine.sandbox.bwrap import Bind, Launcher, Outcome, _sandbox_uid, bwrap_path, run_unisolated
from engine.sandbox.cgroup import SandboxCgroup, open_cgroup
from engine.sandbox.env import build_env, invokes_shell
from engine.types import EngineError, ExecResult, FileEntry

log = logging.getLogger(__name__)
_warned_unisolated = False
_warn_lock = threading.Lock()

DEFAULT_READ_LIMIT = 64 * 1024 * 1024  # the most a host-side read ever loads into the worker
TOOL_OUTPUT_CAP = toolhost.MAX_OUTPUT_BYTES + 1024 * 1024


DIR_SLACK_BYTES = 16 * 1024 * 1024  # the sandbox directory's tmpfs: the workspace's cap plus this


def default_base_dir() -> str:
    return "/tmp/agentclash-sandboxes"  # noqa: S108 - the default SANDBOX_ROOT; TMPDIR is not read


class LocalSandbox:
    """Implements ``engine.types.Sandbox`` on the local filesystem plus bubblewrap."""

    def __init__(self, config: SandboxConfig, *, base_dir: str | None = None, settings: SandboxSettings | None = None):
        self.config = config
        self.settings = settings or SandboxSettings()
        self.id = "sbx-" + uuid.uuid4().hex[:16]
        self.allow_network = config.allow_network
        self.destroyed = False
        # The warm pool's hook, told whether a command or data tool ever ran here (pool.py).
        self.on_destroyed: Callable[[bool], None] | None = None
        self.uid = _sandbox_uid()
        base = base_dir or default_base_dir()
        os.makedirs(base, mode=0o711, exist_ok=True)
        if self.uid is not None and not _traversable(os.path.dirname(os.path.abspath(base))):
            # bwrap runs as the per-sandbox uid and must be able to walk to the workspace.
            log.warning("sandbox base_dir %s is not world-traversable; using %s", base, default_base_dir())
            base = default_base_dir()
            os.makedirs(base, mode=0o711, exist_ok=True)
        if self.uid is not None:
            os.chmod(base, 0o711)  # noqa: S103 - traversable by the per-sandbox uid, not listable
        self.dir = os.path.join(base, self.id)
        os.mkdir(self.dir, 0o711)
        self.workspace_cap = config.max_workspace_bytes or self.settings.default_workspace_bytes
        # The sandbox's own directory on a tmpfs when the worker may mount (the workspace's mount
        # point, the private files, the owner record, the egress socket): a dozen metadata writes
        # of a disk filesystem per sandbox (~1.5 ms of CPU on ext4) become memory operations. Sized
        # to hold the workspace too should its own tmpfs not mount; removed with the sandbox.
        if self.settings.workspace_tmpfs:
            mounts.mount_workspace(self.dir, self.workspace_cap + DIR_SLACK_BYTES, None, mode=0o711)
        stale.write_owner(self.dir)  # lets a later worker remove this sandbox if we die
        self.root = os.path.join(self.dir, "workspace")
        self.private = os.path.join(self.dir, "private")
        os.mkdir(self.root, 0o700)
        os.mkdir(self.private, 0o755)
        # A tmpfs of the cap's size makes the kernel enforce it for commands too (ENOSPC).
        self.capped_fs = self.settings.workspace_tmpfs and mounts.mount_workspace(self.root, self.workspace_cap, self.uid)
        if self.uid is not None:
            os.chown(self.root, self.uid, self.uid)
        with open(os.path.join(self.private, "passwd"), "w") as fh:
            uid = self.uid if self.uid is not None else os.getuid()
            fh.write(f"sandbox:x:{uid}:{uid}:sandbox:/workspace:/usr/sbin/nologin\n")
        with open(os.path.join(self.private, "group"), "w") as fh:
            gid = self.uid if self.uid is not None else os.getgid()
            fh.write(f"sandbox:x:{gid}:\n")
        self._launcher: Launcher | None = None
        self.binds: tuple[Bind, ...] = ()  # read-only binds, set before a launcher starts (verification.py)
        self._ran = False  # a command or data tool ran before a restart()
        self.cgroup: SandboxCgroup | None = None
        self._aborted = threading.Event()
        self._usage_before = 0
        self._root_fd = fs.open_root(self.root)
        self.isolated = bwrap_path() is not None
        # Egress (engine/net/proxy.py): a proxy per sandbox when the pack allows network and the
        # operator did not turn it off. Attempts are queued by proxy threads and handed to
        # ``egress_listener`` on the calling thread after each exec (the event sink is not
        # thread-safe).
        self.egress_enabled = config.egress_enabled
        self.egress_listener: Callable[[EgressAttempt | EgressContent], None] | None = None
        # Content inspection of allowed egress (set before the first exec, like the listener).
        self.egress_inspector: Inspector | None = None
        self.egress_resolver: Resolver | None = None  # DNS override for the proxy (tests)
        self._proxy: EgressProxy | None = None
        self._egress: list[EgressAttempt | EgressContent] = []
        self._egress_lock = threading.Lock()

    # ------------------------------------------------------------------ files
    def _check_live(self) -> None:
        if self.destroyed:
            raise EngineError("sandbox was destroyed")

    def workspace_bytes(self) -> int:
        if self.capped_fs:
            st = os.fstatvfs(self._root_fd)
            return (st.f_blocks - st.f_bfree) * st.f_frsize
        return fs.tree_bytes(self._root_fd)

    def _check_quota(self, incoming: int, replacing: int = 0) -> None:
        if self.workspace_bytes() - replacing + incoming > self.workspace_cap:
            raise WorkspaceFullError()

    def host_path(self, path: str) -> str:
        """The host path of a workspace file, for tests and staging; tools never open it by name."""
        self._check_live()
        return fs.host_path(self.root, self._root_fd, path)

    def resolve_path(self, raw: str) -> str:
        """The contained, symlink-free agent path of ``raw`` (the tail may not exist)."""
        self._check_live()
        return fs.agent_path(fs.resolve(self._root_fd, raw))

    def make_dirs(self, path: str) -> None:
        """Create the contained directory ``path`` and its missing parents, owned by the sandbox."""
        self._check_live()
        fs.make_dirs(self._root_fd, fs.agent_components(path), path, self.uid)

    def stage_files(self, files: dict[str, bytes]) -> None:
        for path, data in files.items():
            self.write_file(path, data)

    def read_file(self, path: str, limit: int = DEFAULT_READ_LIMIT) -> bytes:
        """Read a regular workspace file; FileTooLargeError over ``limit`` (checked before reading)."""
        self._check_live()
        try:
            fd, _ = fs.open_file(self._root_fd, path, os.O_RDONLY)
        except OSError as exc:
            if exc.errno == errno.ENXIO:  # a socket
                raise IsADirectoryError(errno.EISDIR, "not a regular file", path) from None
            raise
        try:
            return fs.read_regular(fd, path, limit)
        finally:
            os.close(fd)

    def write_file(self, path: str, data: bytes) -> None:
        self._check_live()
        fd: int | None
        try:
            fd, _ = fs.open_file(self._root_fd, path, os.O_WRONLY)
        except FileNotFoundError:
            fd = None
        except OSError as exc:
            if exc.errno == errno.ENXIO:  # a FIFO nobody reads, or a socket
                raise IsADirectoryError(errno.EISDIR, "not a regular file", path) from None
            raise
        try:
            existing = 0
            if fd is not None:
                st = os.fstat(fd)
                if not stat.S_ISREG(st.st_mode):
                    raise IsADirectoryError(errno.EISDIR, "not a regular file", path)
                existing = st.st_blocks * 512
            self._check_quota(len(data), existing)
            if fd is None:
                fd, _ = fs.open_file(self._root_fd, path, os.O_WRONLY | os.O_CREAT, 0o644, make_parents=self.uid)
                if not stat.S_ISREG(os.fstat(fd).st_mode):
                    raise IsADirectoryError(errno.EISDIR, "not a regular file", path)
                if self.uid is not None:
                    os.fchown(fd, self.uid, self.uid)
            os.ftruncate(fd, 0)
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
        except OSError as exc:
            if exc.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG):
                raise WorkspaceFullError() from None
            raise
        finally:
            if fd is not None:
                os.close(fd)

    def list_files(self, prefix: str = WORKSPACE) -> list[FileEntry]:
        self._check_live()
        fd, parts = fs.open_dir(self._root_fd, prefix)
        entries: list[FileEntry] = []
        try:
            self._walk(fd, fs.agent_path(parts), entries)
        finally:
            os.close(fd)
        entries.sort(key=lambda e: e.path)
        return entries

    def _walk(self, dfd: int, agent_dir: str, out: list[FileEntry], depth: int = 0) -> None:
        if depth > 64:
            return
        with os.scandir(dfd) as it:
            items = list(it)
        for entry in items:
            try:
                st = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            path = agent_dir.rstrip("/") + "/" + entry.name
            if stat.S_ISREG(st.st_mode):
                out.append(FileEntry(path=path, size=st.st_size))
            elif stat.S_ISDIR(st.st_mode):
                try:
                    sub = os.open(entry.name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dfd)
                except OSError:
                    continue
                try:
                    self._walk(sub, path, out, depth + 1)
                finally:
                    os.close(sub)

    # ------------------------------------------------------------------ exec
    def _rlimits(self, timeout: float | None = None) -> list[tuple[str, int]]:
        fsize = min(self.config.file_size_bytes, self.workspace_cap)
        cpu = [("RLIMIT_CPU", int(timeout) + 5)] if timeout is not None else []
        return cpu + [
            ("RLIMIT_AS", self.config.memory_bytes),
            ("RLIMIT_NPROC", self.config.max_processes),
            ("RLIMIT_FSIZE", fsize),
            ("RLIMIT_NOFILE", 1024),
            ("RLIMIT_CORE", 0),
        ]

    def _contained_dir(self, cwd: str) -> str:
        fd, parts = fs.open_dir(self._root_fd, cwd or WORKSPACE)
        os.close(fd)
        return fs.agent_path(parts)

    def _launcher_for_run(self) -> Launcher:
        if self._launcher is None:
            if self.cgroup is None:  # after a restart() the sandbox keeps its cgroup
                self.cgroup = open_cgroup(
                    self.id,
                    memory_bytes=self.config.memory_bytes,
                    max_processes=self.config.max_processes,
                    parent=self.settings.cgroup_parent,
                )
            launcher = Launcher(self.config, self.root, self.private, self.uid, self._rlimits(), settings=self.settings, cgroup=self.cgroup)
            launcher.egress_dir = self._start_egress()
            launcher.binds = self.binds + tuple(Bind(source, dest) for source, dest in self.config.read_only_binds)
            if not self.capped_fs:
                launcher.watch = self._workspace_overflowing
            if self._aborted.is_set():
                launcher.abort()
            self._launcher = launcher
        return self._launcher

    # ------------------------------------------------------------------ warm start (pool.py)
    def prestart(self) -> None:
        """Start the cgroup, bwrap and the launcher now, with the workspace still empty."""
        self._check_live()
        if self.isolated:
            self._launcher_for_run().prestart()

    def warm_ready(self) -> bool:
        """Pre-started and untouched: launcher alive, no command run, nothing in the workspace."""
        launcher = self._launcher
        if self.destroyed or launcher is None or not launcher.pristine() or self._aborted.is_set():
            return False
        return not os.listdir(self._root_fd)

    def adopt(self, config: SandboxConfig) -> None:
        """Give a pre-started sandbox the config of the case it is handed to (``pool.shape_key``
        equal: what bwrap and the launcher were started with is the same; everything else is
        per call)."""
        if config.egress_enabled:
            raise ValueError("a sandbox with egress is never pre-started")
        self.config = config
        self.allow_network = config.allow_network
        self.egress_enabled = False
        if self._launcher is not None:
            self._launcher.config = config

    def _workspace_overflowing(self) -> bool:
        """Fallback cap without a sized filesystem: stop a command that grows the workspace past it."""
        return self.workspace_bytes() > max(self.workspace_cap, self._usage_before)

    def _require_isolation(self) -> None:
        if self.isolated:
            return
        if not self.settings.allow_unisolated:
            raise IsolationUnavailableError()
        _warn_unisolated()

    def exec(
        self,
        argv: list[str],
        *,
        cwd: str = WORKSPACE,
        env: dict[str, str] | None = None,
        timeout: float = 120.0,
    ) -> ExecResult:
        """Run argv inside the sandbox. Raises ShellNotAllowedError / IsolationUnavailableError /
        WorkspacePathError for expected refusals and EngineError when the sandbox is broken."""
        self._check_live()
        if not argv or not all(isinstance(a, str) for a in argv) or any("\x00" in a for a in argv):
            raise ValueError("command must be a non-empty list of strings")
        if not self.config.allow_shell and invokes_shell(argv):
            raise ShellNotAllowedError()
        try:
            agent_cwd = self._contained_dir(cwd)
        except FileNotFoundError:
            raise NotADirectoryError(errno.ENOTDIR, "working directory does not exist", cwd) from None
        timeout = max(0.1, float(timeout))
        self._require_isolation()
        egress_env = proxy_env() if self.isolated and self.egress_enabled else {}
        full_env = build_env({**egress_env, **self.config.env_vars}, env)
        self._usage_before = 0 if self.capped_fs else self.workspace_bytes()
        if self.isolated:
            outcome = self._launcher_for_run().run(argv, agent_cwd, full_env, timeout)
            self.deliver_egress()
        else:
            full_env["HOME"] = self.root
            host_cwd = os.path.join(self.root, *fs.agent_components(agent_cwd))
            outcome = run_unisolated(argv, host_cwd, full_env, timeout, self._rlimits(timeout))
        result = outcome.to_exec_result()
        if not self.capped_fs and outcome.exec_error is None:
            usage = self.workspace_bytes()
            if usage > self.workspace_cap and usage > self._usage_before:
                result.stderr += ("\n" if result.stderr else "") + "workspace size limit exceeded"
                result.exit_code = result.exit_code or 1
        return result

    def run_tool(self, name: str, args: dict[str, Any], *, timeout: float) -> Any:
        """Run a data tool (``toolhost.TOOLS``) inside the sandbox and return its value.

        Raises ToolRunError (``timeout``, ``cancelled``, ``memory``, ``crashed`` or the tool's own
        code such as ``not_found``/``outside``/``jq``), IsolationUnavailableError, EngineError.
        """
        self._check_live()
        self._require_isolation()
        timeout = max(0.1, float(timeout))
        env = build_env(self.config.env_vars)
        if self.isolated:
            request = json.dumps({"root": WORKSPACE, "args": args}).encode()
            outcome = self._launcher_for_run().run(None, WORKSPACE, env, timeout, tool=name, stdin=request, output_cap=TOOL_OUTPUT_CAP)
        else:
            request = json.dumps({"root": self.root, "args": args}).encode()
            script = toolhost.__file__
            outcome = run_unisolated([sys.executable, "-I", script, name], self.root, env, timeout, self._rlimits(timeout), stdin=request)
        return _tool_value(outcome)

    def abort(self) -> None:
        """Stop the running command or tool within ~2 s and refuse new ones (thread-safe: cancel)."""
        self._aborted.set()
        launcher = self._launcher
        if launcher is not None:
            launcher.abort()

    def restart(self, config: SandboxConfig) -> None:
        """Start over, empty, for the case's checkers (verification.py): whatever runs here ends now
        with its launcher and namespaces, the workspace is dropped (its tmpfs unmounted), and the
        next command starts a new bwrap (new namespaces, PID 1, ``/tmp``) with ``config`` on a new,
        empty workspace. Only the host uid, the cgroup and the sandbox's directory stay: no process
        of the old sandbox is left to use them. An abort stays in force."""
        self._check_live()
        self._stop_egress()
        launcher, self._launcher = self._launcher, None
        if launcher is not None:
            self._ran = self._ran or launcher.commands > 0
            launcher.dispose()
        if self.cgroup is not None:
            self.cgroup.kill()  # the old PID 1's end killed its namespace; this is the backstop
        os.close(self._root_fd)
        self._root_fd = -1  # a failure below leaves nothing for destroy() to close twice
        if self.capped_fs:
            mounts.unmount(self.root)
        self.root = os.path.join(self.dir, "workspace-" + uuid.uuid4().hex[:8])
        os.mkdir(self.root, 0o700)
        self.capped_fs = self.settings.workspace_tmpfs and mounts.mount_workspace(self.root, self.workspace_cap, self.uid)
        if self.uid is not None:
            os.chown(self.root, self.uid, self.uid)
        self._root_fd = fs.open_root(self.root)
        self.config, self.allow_network = config, config.allow_network
        self.egress_enabled = config.egress_enabled

    # ------------------------------------------------------------------ egress
    def _start_egress(self) -> str | None:
        if not self.egress_enabled:
            return None
        if self._proxy is None:
            network = self.config.allow_network and self.config.network_mode != "off"
            self._proxy = EgressProxy(
                self._egress_socket_dir(),
                self.config.egress_policy if network else DENY_ALL,  # the mock vault alone: nothing else
                self._note_egress,
                uid=self.uid,
                resolver=self.egress_resolver,
                inspector=self.egress_inspector,
                vault=VaultMock(dict(self.config.vault_secrets)) if self.config.vault_secrets else None,
            ).start()
        self._proxy.inspector = self.egress_inspector
        return self._proxy.socket_dir

    def _note_egress(self, attempt: EgressAttempt | EgressContent) -> None:  # proxy threads
        with self._egress_lock:
            self._egress.append(attempt)

    def deliver_egress(self) -> None:
        """Hand queued egress attempts to ``egress_listener`` (on the calling thread)."""
        if self._proxy is not None:
            self._proxy.settle()
        with self._egress_lock:
            attempts, self._egress = self._egress, []
        listener = self.egress_listener
        if listener is not None:
            for attempt in attempts:
                listener(attempt)

    def _egress_socket_dir(self) -> str:
        """Where the proxy's socket lives: bound into the sandbox, its host path shows in the
        sandbox's ``/proc/self/mountinfo``, so it goes in the root skeleton's neutral directory
        (``rootfs.neutral_directory``: ``/<digest>/egress-<random>``) rather than under
        ``SANDBOX_ROOT``, which may be inside the project."""
        launcher_dir = self.settings.launcher_dir or native.DEFAULT_DIR
        neutral = rootfs.neutral_directory(launcher_dir) if launcher_dir else None
        if neutral is None:
            return os.path.join(self.dir, "egress")
        return os.path.join(neutral, rootfs.EGRESS_PREFIX + uuid.uuid4().hex)

    def _stop_egress(self) -> None:
        if self._proxy is not None:
            self._proxy.close()
            try:
                self.deliver_egress()
            except Exception:
                log.exception("delivering the last egress attempts of sandbox %s failed", self.id)
            if not self._proxy.socket_dir.startswith(self.dir + os.sep):
                shutil.rmtree(self._proxy.socket_dir, ignore_errors=True)
            self._proxy = None

    def destroy(self) -> None:
        if self.destroyed:
            return
        self.destroyed = True
        self._stop_egress()
        with contextlib.suppress(OSError):
            os.close(self._root_fd)
        ran = self._ran or (self._launcher is not None and self._launcher.commands > 0)
        if self._launcher is not None:
            self._launcher.dispose()
            self._launcher = None
        if self.cgroup is not None:
            self.cgroup.remove()
            self.cgroup = None
        stale.remove_sandbox_dir(self.dir)
        if self.on_destroyed is not None:
            self.on_destroyed(ran)

    def __enter__(self) -> LocalSandbox:
        return self

    def __exit__(self, *exc: object) -> None:
        self.destroy()

    def __del__(self) -> None:
        try:
            if self._launcher is not None:
                self._launcher.close(graceful=False)
            if self._proxy is not None:
                self._proxy.close()
        except Exception:  # noqa: BLE001, S110 - best effort in __del__
            pass


_TOOL_MESSAGES = {
    "memory": "the sandbox ran out of memory",
    "too_large_output": "result too large",
    "too_deep": "input is nested too deeply",
}


def _tool_value(outcome: Outcome) -> Any:
    if outcome.cancelled:
        raise ToolRunError("cancelled", "cancelled")
    if outcome.timed_out:
        raise ToolRunError("timeout", "timed out")
    if outcome.out_of_memory:
        raise ToolRunError("memory", _TOOL_MESSAGES["memory"])
    if outcome.exec_error is not None or outcome.stdout_truncated:
        raise ToolRunError("crashed" if not outcome.stdout_truncated else "too_large_output", "failed")
    try:
        answer = json.loads(outcome.stdout)
    except ValueError:
        answer = None
    if not isinstance(answer, dict):
        if outcome.exit_code in (137, 128 + 9) or "MemoryError" in outcome.stderr.decode("utf-8", "replace"):
            raise ToolRunError("memory", _TOOL_MESSAGES["memory"])
        raise ToolRunError("crashed", "failed")
    if "error" in answer:
        code = str(answer["error"])
        raise ToolRunError(code, str(answer.get("message") or _TOOL_MESSAGES.get(code, "")))
    return answer.get("ok")


def _traversable(path: str) -> bool:
    while True:
        st = os.stat(path)
        if not st.st_mode & 0o001:
            return False
        parent = os.path.dirname(path)
        if parent == path:
            return True
        path = parent


def _warn_unisolated() -> None:
    global _warned_unisolated
    with _warn_lock:
        if not _warned_unisolated:
            log.warning(
                "SANDBOX_ALLOW_UNISOLATED: running agent commands WITHOUT bubblewrap isolation. "
                "Development only — never enable this on a worker that runs untrusted packs."
            )
            _warned_unisolated = True


def read_limited(sandbox: Any, path: str, limit: int) -> bytes:
    """``sandbox.read_file`` with a size limit checked before reading (any ``Sandbox``)."""
    if isinstance(sandbox, LocalSandbox):
        return sandbox.read_file(path, limit)
    data: bytes = sandbox.read_file(path)
    if len(data) > limit:
        raise FileTooLargeError(path, len(data), limit)
    return data


def run_tool(sandbox: Any, name: str, args: dict[str, Any], *, timeout: float) -> Any:
    """Run data tool ``name`` inside ``sandbox`` (see :meth:`LocalSandbox.run_tool`)."""
    if not isinstance(sandbox, LocalSandbox):
        raise ToolRunError("unavailable", "this sandbox cannot run data tools")
    return sandbox.run_tool(name, args, timeout=timeout)


def contained_path(sandbox: Any, raw: str) -> str:
    """The symlink-free agent path (``/workspace/...``) of ``raw``; WorkspacePathError if it escapes."""
    if not isinstance(sandbox, LocalSandbox):
        raise ToolRunError("unavailable", "this sandbox cannot run data tools")
    return sandbox.resolve_path(raw)


__all__ = ["LocalSandbox", "WorkspacePathError", "contained_path", "read_limited", "run_tool"]

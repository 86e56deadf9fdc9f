"""LocalSandbox: a per-case host directory seen by the agent as ``/workspace``."""

from __future__ import annotations

import errno
import logging
import os
import shutil
import stat
import tempfile
import threading
import uuid

from engine.sandbox import fs
from engine.sandbox.base import (
    WORKSPACE,
    IsolationUnavailableError,
    SandboxConfig,
    ShellNotAllowedError,
    WorkspaceFullError,
    WorkspacePathError,
    unisolated_allowed,
)
from engine.sandbox.bwrap import Launcher, _sandbox_uid, bwrap_path, run_unisolated
from engine.sandbox.env import build_env, invokes_shell
from engine.types import EngineError, ExecResult, FileEntry

log = logging.getLogger(__name__)
_warned_unisolated = False
_warn_lock = threading.Lock()


def default_base_dir() -> str:
    return os.path.join(tempfile.gettempdir(), "agentclash-sandboxes")


class LocalSandbox:
    """Implements ``engine.types.Sandbox`` on the local filesystem plus bubblewrap."""

    def __init__(self, config: SandboxConfig, *, base_dir: str | None = None):
        self.config = config
        self.id = "sbx-" + uuid.uuid4().hex[:16]
        self.allow_network = config.allow_network
        self.destroyed = False
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
        self.root = os.path.join(self.dir, "workspace")
        self.private = os.path.join(self.dir, "private")
        os.mkdir(self.root, 0o700)
        os.mkdir(self.private, 0o755)
        if self.uid is not None:
            os.chown(self.root, self.uid, self.uid)
        with open(os.path.join(self.private, "passwd"), "w") as fh:
            uid = self.uid if self.uid is not None else os.getuid()
            fh.write(f"sandbox:x:{uid}:{uid}:sandbox:/workspace:/usr/sbin/nologin\n")
        with open(os.path.join(self.private, "group"), "w") as fh:
            gid = self.uid if self.uid is not None else os.getgid()
            fh.write(f"sandbox:x:{gid}:\n")
        self._launcher: Launcher | None = None
        self._root_fd = fs.open_root(self.root)
        self.isolated = bwrap_path() is not None

    # ------------------------------------------------------------------ files
    def _check_live(self) -> None:
        if self.destroyed:
            raise EngineError("sandbox was destroyed")

    def _chown(self, fd: int) -> None:
        if self.uid is not None:
            os.fchown(fd, self.uid, self.uid)

    def workspace_bytes(self) -> int:
        total = 0
        for dirpath, dirnames, filenames in os.walk(self.root):
            for name in filenames + dirnames:
                try:
                    total += os.lstat(os.path.join(dirpath, name)).st_blocks * 512
                except OSError:
                    pass
        return total

    def _check_quota(self, incoming: int, replacing: int = 0) -> None:
        cap = self.config.max_workspace_bytes
        if cap is not None and self.workspace_bytes() - replacing + incoming > cap:
            raise WorkspaceFullError()

    def host_path(self, path: str) -> str:
        self._check_live()
        return fs.host_path(self.root, path)

    def stage_files(self, files: dict[str, bytes]) -> None:
        for path, data in files.items():
            self.write_file(path, data)

    def read_file(self, path: str) -> bytes:
        self._check_live()
        fd, _ = fs.open_file(self.root, path, os.O_RDONLY, root_fd=self._root_fd)
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise IsADirectoryError(errno.EISDIR, "not a regular file", path)
            chunks = []
            want = st.st_size + 1
            while True:
                chunk = os.read(fd, max(want, 65536))
                if not chunk:
                    break
                chunks.append(chunk)
            return b"".join(chunks)
        finally:
            os.close(fd)

    def write_file(self, path: str, data: bytes) -> None:
        self._check_live()
        parts = fs.resolve(self.root, path)
        existing = 0
        try:
            existing = os.lstat(os.path.join(self.root, *parts)).st_blocks * 512 if parts else 0
        except OSError:
            pass
        self._check_quota(len(data), existing)
        fd, _ = fs.open_file(self.root, path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644, create_parents=True, root_fd=self._root_fd)
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise IsADirectoryError(errno.EISDIR, "not a regular file", path)
            self._chown(fd)
            view = memoryview(data)
            while view:
                written = os.write(fd, view)
                view = view[written:]
        finally:
            os.close(fd)
        if self.uid is not None and len(parts) > 1:
            for i in range(1, len(parts)):
                d = os.path.join(self.root, *parts[:i])
                st = os.lstat(d)
                if st.st_uid != self.uid and stat.S_ISDIR(st.st_mode):
                    os.lchown(d, self.uid, self.uid)

    def list_files(self, prefix: str = WORKSPACE) -> list[FileEntry]:
        self._check_live()
        fd, parts = fs.open_dir(self.root, prefix)
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
            st = entry.stat(follow_symlinks=False)
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
        fsize = self.config.file_size_bytes
        if self.config.max_workspace_bytes:
            fsize = min(fsize, self.config.max_workspace_bytes)
        cpu = [("RLIMIT_CPU", int(timeout) + 5)] if timeout is not None else []
        return cpu + [
            ("RLIMIT_AS", self.config.memory_bytes),
            ("RLIMIT_NPROC", self.config.max_processes),
            ("RLIMIT_FSIZE", fsize),
            ("RLIMIT_NOFILE", 1024),
            ("RLIMIT_CORE", 0),
        ]

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
        parts = fs.resolve(self.root, cwd or WORKSPACE)
        if not os.path.isdir(os.path.join(self.root, *parts)):
            raise NotADirectoryError(errno.ENOTDIR, "working directory does not exist", cwd)
        timeout = max(0.1, float(timeout))
        full_env = build_env(self.config.env_vars, env)
        if self.isolated:
            if self._launcher is None:
                self._launcher = Launcher(self.config, self.root, self.private, self.uid, self._rlimits())
            return self._launcher.run(argv, fs.agent_path(parts), full_env, timeout)
        if not unisolated_allowed():
            raise IsolationUnavailableError()
        _warn_unisolated()
        full_env["HOME"] = self.root
        return run_unisolated(argv, os.path.join(self.root, *parts), full_env, timeout, self._rlimits(timeout))

    def destroy(self) -> None:
        if self.destroyed:
            return
        self.destroyed = True
        try:
            os.close(self._root_fd)
        except OSError:
            pass
        if self._launcher is not None:
            self._launcher.close()
            self._launcher = None
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self) -> LocalSandbox:
        return self

    def __exit__(self, *exc: object) -> None:
        self.destroy()

    def __del__(self) -> None:
        try:
            if self._launcher is not None:
                self._launcher.close()
        except Exception:  # noqa: BLE001, S110 - best effort in __del__
            pass


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
                "SANDBOX_ALLOW_UNISOLATED=1: running agent commands WITHOUT bubblewrap isolation. "
                "Development only — never enable this on a worker that runs untrusted packs."
            )
            _warned_unisolated = True


__all__ = ["LocalSandbox", "WorkspacePathError"]

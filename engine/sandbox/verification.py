"""The verification sandbox: where a case's checkers run, out of the agent's reach.

docs/scoring.md ("Verification") states the rule; docs/engine-safety.md the threat (the agent
rewrites its grading). A :class:`VerificationSandbox` is a new, cold sandbox for the checks of one
completed case, never from the warm pool and never reused. Its workspace holds:

- the files the evaluation spec captures, copied out of the agent's workspace as regular files;
- the pack's own files, staged from the manifest (never from the agent's workspace) into a host
  directory the sandbox cannot reach and bound **read-only** at the paths they were staged at: a
  whole directory when no captured file lies below it, else file by file.

Each check is ``sh -c`` (no login shell) with ``HOME=/tmp`` (the sandbox's own, empty ``/tmp``),
``ENV`` and ``BASH_ENV`` empty and Python's user site off, so no start-up file the agent could
have written runs. The checker may write its test counts (JSON, JUnit XML or a summary line) to
the file named by ``$AGENTCLASH_RESULTS``, in a directory mounted outside the workspace and read
from the host; each check gets a new, unpredictable name. The sandbox has no network, whatever
the pack allows the agent, and is aborted with the agent's sandbox (the case deadline).
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import os
import secrets
from collections.abc import Iterable, Mapping

from engine.sandbox import fs, mounts
from engine.sandbox.base import SandboxConfig, SandboxSettings
from engine.sandbox.bwrap import Bind, Launcher
from engine.sandbox.local import LocalSandbox
from engine.types import CheckRun

RESULTS_DIR = "/run/agentclash"
RESULTS_LIMIT = 1024 * 1024  # the most of a results file the host reads
RESULTS_DIR_BYTES = 4 * 1024 * 1024  # the results directory's cap (a tmpfs of this size, else measured)
CHECK_HOME = "/tmp"  # noqa: S108 - the verification sandbox's own tmpfs, empty at its start

Parts = tuple[str, ...]


def read_only_mounts(checker: Iterable[Parts], agent: Iterable[Parts]) -> list[tuple[Parts, bool]]:
    """What to bind read-only so every checker file is covered and no agent file is: ``(workspace
    components, is a directory)``, the shallowest directory that holds no agent file, else the file."""
    agent_paths = set(agent)
    below_agent = {path[:depth] for path in agent_paths for depth in range(1, len(path) + 1)}
    mounts: list[tuple[Parts, bool]] = []

    def visit(prefix: Parts, paths: list[Parts]) -> None:
        children: dict[str, list[Parts]] = {}
        for path in paths:
            children.setdefault(path[0], []).append(path[1:])
        for name, rests in sorted(children.items()):
            here = (*prefix, name)
            if () in rests:  # a checker file
                if here not in below_agent:
                    mounts.append((here, False))
            elif here not in below_agent:
                mounts.append((here, True))
            else:
                visit(here, [rest for rest in rests if rest])

    visit((), [path for path in set(checker) if path])
    return mounts


class VerificationSandbox(LocalSandbox):
    """A fresh sandbox holding ``files`` (the captured files, agent path → bytes) and ``read_only``
    (the pack's files, bound read-only)."""

    def __init__(
        self,
        config: SandboxConfig,
        *,
        base_dir: str | None = None,
        settings: SandboxSettings | None = None,
        files: Mapping[str, bytes],
        read_only: Mapping[str, bytes],
    ) -> None:
        super().__init__(config, base_dir=base_dir, settings=settings)
        self.parent: LocalSandbox | None = None
        self._results_fd = -1
        self.results_capped = False
        try:
            self.results_dir = os.path.join(self.dir, "results")
            os.mkdir(self.results_dir, 0o700)
            # Host disk the checker can write: capped like the workspace (a sized tmpfs, else measured).
            self.results_capped = self.settings.workspace_tmpfs and mounts.mount_workspace(self.results_dir, RESULTS_DIR_BYTES, self.uid)
            if self.uid is not None:
                os.chown(self.results_dir, self.uid, self.uid)
            self._results_fd = os.open(self.results_dir, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
            self.stage_files(dict(files))
            if self.isolated:
                self.binds = (*self._checker_binds(read_only, files), Bind(self.results_dir, RESULTS_DIR, writable=True))
            else:  # development only (SANDBOX_ALLOW_UNISOLATED): no mounts, so no read-only files either
                self.stage_files(dict(read_only))
        except BaseException:
            self.destroy()
            raise

    def _checker_binds(self, read_only: Mapping[str, bytes], files: Mapping[str, bytes]) -> list[Bind]:
        root = os.path.join(self.dir, "checker")  # the host's copy; only the binds reach it
        os.mkdir(root, 0o755)
        checker: list[Parts] = []
        for path, data in read_only.items():
            parts = tuple(fs.agent_components(path))
            if not parts:
                continue
            directory = os.path.join(root, *parts[:-1])
            os.makedirs(directory, 0o755, exist_ok=True)
            fd = os.open(os.path.join(directory, parts[-1]), os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o444)
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
            checker.append(parts)
        agent = [tuple(fs.agent_components(path)) for path in files]
        return [Bind(os.path.join(root, *parts), fs.agent_path(list(parts))) for parts, _ in read_only_mounts(checker, agent)]

    def _launcher_for_run(self) -> Launcher:
        launcher = super()._launcher_for_run()
        if not self.results_capped:
            launcher.watch = self._overflowing
        return launcher

    def _overflowing(self) -> bool:
        """The fallback cap without sized filesystems: the workspace's, and the results directory's."""
        if not self.capped_fs and self._workspace_overflowing():
            return True
        return fs.tree_bytes(self._results_fd) > RESULTS_DIR_BYTES

    def run_check(self, command: str, *, cwd: str, timeout: float) -> CheckRun:
        """Run one checker command; its exit, and the results file it wrote (if any)."""
        name = "results-" + secrets.token_hex(8)
        inside = (RESULTS_DIR if self.isolated else self.results_dir) + "/" + name
        env = {"HOME": CHECK_HOME, "ENV": "", "BASH_ENV": "", "PYTHONNOUSERSITE": "1", "AGENTCLASH_RESULTS": inside}
        result = self.exec(["sh", "-c", command], cwd=cwd, env=env, timeout=timeout)
        if not self.results_capped and fs.tree_bytes(self._results_fd) > RESULTS_DIR_BYTES:
            return CheckRun(result=result, results_error="the results directory grew past its cap")
        try:
            return CheckRun(result=result, results=self._read_results(name))
        except OSError as exc:
            return CheckRun(result=result, results_error=f"the results file could not be read: {exc.strerror or exc}")

    def _read_results(self, name: str) -> bytes | None:
        try:
            fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=self._results_fd)
        except FileNotFoundError:
            return None
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise OSError(errno.ELOOP, "it is a symbolic link") from None
            raise
        try:
            return fs.read_regular(fd, name, RESULTS_LIMIT)
        finally:
            os.close(fd)

    def destroy(self) -> None:
        if self._results_fd >= 0:
            with contextlib.suppress(OSError):
                os.close(self._results_fd)
            self._results_fd = -1
        parent = self.parent
        if parent is not None:
            with contextlib.suppress(ValueError):
                parent.linked.remove(self)
        super().destroy()


def verification_sandbox(like: object, *, files: Mapping[str, bytes], read_only: Mapping[str, bytes]) -> VerificationSandbox:
    """A verification sandbox beside the agent's sandbox ``like``: its limits, the pack's ``env_vars``
    and operator settings, but a shell for the checker, no network and no tool policy; aborted
    when ``like`` is (the case's deadline and cancel watch abort the agent's sandbox)."""
    if not isinstance(like, LocalSandbox):
        raise TypeError(f"a verification sandbox is made beside a LocalSandbox, not a {type(like).__name__}")
    config = dataclasses.replace(
        like.config, allow_shell=True, allow_network=False, network_mode="off", allowed_tool_kinds=frozenset(), max_tool_calls=None
    )
    fresh = VerificationSandbox(config, base_dir=os.path.dirname(like.dir), settings=like.settings, files=files, read_only=read_only)
    fresh.parent = like
    like.linked.append(fresh)
    if like.aborted():  # after linking: an abort from now on reaches it anyway
        fresh.abort()
    return fresh

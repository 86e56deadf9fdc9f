"""The verification sandbox: where a case's checkers run, out of the agent's reach.

docs/scoring.md ("Verification") states the rule; docs/engine-safety.md the threat (the agent
rewrites its grading). :func:`verification_sandbox` turns the sandbox the agent left behind into a
fresh one for the checks of its case (``LocalSandbox.restart``): everything the agent started ends
with its launcher and namespaces, its workspace is dropped, and the checks run under a new bwrap
(new namespaces, PID 1 and ``/tmp``) on a new, empty workspace that holds only:

- the files the evaluation spec captures, copied out of the agent's workspace beforehand as
  regular files;
- the pack's own files, staged from the manifest (never from the agent's workspace), **read-only**
  at the paths they were staged at. When the sandbox runs as its own unprivileged uid (a root
  worker) they are the host root's: mode 0444 files in 0755 directories where no captured file
  lies, in sticky world-writable (1777) directories, the workspace's root included, where one
  does — the checker can create files but not change, remove or rename what is not its own.
  Otherwise (a non-root worker: the sandbox's uid owns every file) they are written to a host
  directory no sandbox can reach and bound read-only: a whole directory when no captured file
  lies below it, else file by file.

Restarting in place instead of making a second sandbox keeps the host uid, the cgroup and the
sandbox's directory (no process of the agent's is left to use them) and saves what a sandbox costs
besides its bwrap (docs/performance.md, "Verification sandbox").

Each check is ``sh -c`` (no login shell) with ``HOME=/tmp`` (the new, empty ``/tmp``), ``ENV`` and
``BASH_ENV`` empty and Python's user site off, so no start-up file runs. The checker may write its
test counts (JSON, JUnit XML or a summary line) to the file named by ``$AGENTCLASH_RESULTS``: in a
directory of the new workspace that holds none of the agent's files, with a new, unpredictable
name for every check, read from the host without leaving the workspace. The restarted sandbox has
no network, whatever the pack allows the agent, and an abort of the case still stops it.
"""

from __future__ import annotations

import dataclasses
import os
import re
import secrets
from collections.abc import Iterable, Mapping

from engine.sandbox import fs
from engine.sandbox.bwrap import Bind
from engine.sandbox.local import LocalSandbox
from engine.types import CheckRun

RESULTS_DIR = "/workspace/.agentclash-results"
RESULTS_LIMIT = 1024 * 1024  # the most of a results file the host reads
CHECK_HOME = "/tmp"  # noqa: S108 - the restarted sandbox's own tmpfs, empty at its start

Parts = tuple[str, ...]
_PYTEST = re.compile(r"(?:^|[\s;&|(`'\"/])(?:py\.test|pytest)(?=$|[\s;&|)`'\"])|-m\s*pytest\b")
_OWN_JUNIT = re.compile(r"--junit-?xml")
_RESULTS_VAR = re.compile(r"\$\{?AGENTCLASH_RESULTS\b")
NO_PYTEST_REPORT = (
    "pytest left no report in the harness's results file: the test process ended before pytest's own "
    "reporting (code under test that exits the process while it is imported or tested)"
)


def pytest_reports_here(command: str) -> bool:
    """Whether ``command`` runs pytest and its JUnit report can be the harness's channel: not when
    the pack sends the report somewhere else (its own ``--junitxml`` to another file wins)."""
    if not _PYTEST.search(command):
        return False
    return not _OWN_JUNIT.search(command) or bool(_RESULTS_VAR.search(command))


def read_only_mounts(checker: Iterable[Parts], agent: Iterable[Parts]) -> list[tuple[Parts, bool]]:
    """What to bind read-only so every checker file is covered and no agent file is: ``(workspace
    components, is a directory)``, the shallowest directory that holds no agent file, else the file."""
    below_agent = {path[:depth] for path in set(agent) for depth in range(1, len(path) + 1)}
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


class VerificationSandbox:
    """The checkers' sandbox: ``sandbox`` restarted with ``files`` (the captured files, agent path
    → bytes) and ``read_only`` (the pack's files). The sandbox stays its owner's to destroy."""

    def __init__(self, sandbox: LocalSandbox, *, files: Mapping[str, bytes], read_only: Mapping[str, bytes]) -> None:
        config = dataclasses.replace(
            sandbox.config, allow_shell=True, allow_network=False, network_mode="off", allowed_tool_kinds=frozenset(), max_tool_calls=None
        )
        sandbox.restart(config)
        self.sandbox = sandbox
        self.id = sandbox.id
        if not sandbox.isolated:  # development only (SANDBOX_ALLOW_UNISOLATED): nothing is read-only
            sandbox.stage_files(dict(read_only))
        elif sandbox.uid is not None:
            self._stage_owned(read_only, files)
        else:
            sandbox.binds = tuple(self._checker_binds(read_only, files))
        sandbox.make_dirs(RESULTS_DIR)
        sandbox.stage_files(dict(files))

    def _stage_owned(self, read_only: Mapping[str, bytes], files: Mapping[str, bytes]) -> None:
        """The pack's files owned by the host's root in the new workspace (nothing runs there yet)."""
        root = self.sandbox.root
        checker = {tuple(fs.agent_components(path)): data for path, data in read_only.items()}
        agent = [tuple(fs.agent_components(path)) for path in files]
        units = read_only_mounts(checker, agent)
        sealed = {parts for parts, is_dir in units if is_dir}  # directories of checker files only
        covered = {parts for parts, _ in units}

        def directory(parts: Parts) -> None:
            path = os.path.join(root, *parts)
            if not os.path.isdir(path):
                os.mkdir(path)
            os.chown(path, 0, 0, follow_symlinks=False)
            os.chmod(path, 0o755 if any(parts[: len(d)] == d for d in sealed) else 0o1777)

        directory(())
        for parts, data in checker.items():
            if not parts or not any(parts[: len(c)] == c for c in covered):
                continue  # the workspace itself, or a captured path: the agent's
            for depth in range(1, len(parts)):
                directory(parts[:depth])
            _write_read_only(os.path.join(root, *parts), data)  # the worker is root: so is the file

    def _checker_binds(self, read_only: Mapping[str, bytes], files: Mapping[str, bytes]) -> list[Bind]:
        if not read_only:
            return []
        root = os.path.join(self.sandbox.dir, "checker")  # the host's copy; only the binds reach it
        os.mkdir(root, 0o755)
        checker: list[Parts] = []
        for path, data in read_only.items():
            parts = tuple(fs.agent_components(path))
            if not parts:
                continue
            os.makedirs(os.path.join(root, *parts[:-1]), 0o755, exist_ok=True)
            _write_read_only(os.path.join(root, *parts), data)
            checker.append(parts)
        agent = [tuple(fs.agent_components(path)) for path in files]
        return [Bind(os.path.join(root, *parts), fs.agent_path(list(parts))) for parts, _ in read_only_mounts(checker, agent)]

    def run_check(self, command: str, *, cwd: str, timeout: float) -> CheckRun:
        """Run one checker command; its exit, and the results file it wrote (if any).

        A command that runs pytest gets ``--junitxml=<the results file>`` through ``PYTEST_ADDOPTS``
        and must leave that report: pytest writes it when the session ends, so code under test that
        ends the test process early with status 0 (``os._exit(0)`` when imported) leaves none, and
        the check fails instead of passing (docs/scoring.md)."""
        results = f"{RESULTS_DIR}/results-{secrets.token_hex(8)}"
        inside = results if self.sandbox.isolated else self.sandbox.host_path(results)
        env = {"HOME": CHECK_HOME, "ENV": "", "BASH_ENV": "", "PYTHONNOUSERSITE": "1", "AGENTCLASH_RESULTS": inside}
        pytest_report = pytest_reports_here(command)
        if pytest_report:
            pack_options = self.sandbox.config.env_vars.get("PYTEST_ADDOPTS", "")
            env["PYTEST_ADDOPTS"] = f"{pack_options} --junitxml={inside}".strip()
        result = self.sandbox.exec(["sh", "-c", command], cwd=cwd, env=env, timeout=timeout)
        try:
            return CheckRun(result=result, results=self.sandbox.read_file(results, RESULTS_LIMIT))
        except FileNotFoundError:
            if pytest_report and result.exit_code == 0:
                return CheckRun(result=result, results_error=NO_PYTEST_REPORT)
            return CheckRun(result=result)
        except (OSError, ValueError) as exc:  # not a regular file, too large, a link out of the workspace
            return CheckRun(result=result, results_error=f"the results file could not be read: {exc}")

    def destroy(self) -> None:
        """Nothing to do: the sandbox is destroyed by its owner (the case's attempt)."""


def _write_read_only(path: str, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o444)
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)


def verification_sandbox(like: object, *, files: Mapping[str, bytes], read_only: Mapping[str, bytes]) -> VerificationSandbox:
    """The sandbox ``like`` the agent left behind, restarted for its case's checkers (see the module
    docstring): its limits, the pack's ``env_vars`` and the operator settings, but a shell for the
    checker, no network and no tool policy. Read what you need of the agent's workspace first."""
    if not isinstance(like, LocalSandbox):
        raise TypeError(f"a verification sandbox is made of a LocalSandbox, not a {type(like).__name__}")
    return VerificationSandbox(like, files=files, read_only=read_only)

"""Whole-sandbox memory and process caps through a cgroup per sandbox (v2, or v1 memory + pids).

RLIMIT_AS is per process: three processes under a 4 GiB RLIMIT_AS can hold 12 GiB. A cgroup
charges every page of every process of the sandbox (and the tmpfs pages they write) to one
counter, and the kernel's OOM killer acts inside the cgroup when it hits the cap.

Layout: one parent directory per hierarchy, ``agentclash-sandboxes`` at the hierarchy's root (a
fixed place, so a restarted worker finds what a dead one left), and one child per sandbox named
after the sandbox id. The launcher is moved in before it runs anything (bwrap ``--block-fd``), so
every process of the sandbox starts inside.

cgroup v2 needs the ``memory`` controller enabled in the parent's ``cgroup.subtree_control``;
v1 needs a writable ``memory`` hierarchy. Where neither works (no root, a read-only
``/sys/fs/cgroup``), :func:`open_cgroup` returns None and the launcher's RSS watchdog bounds the
total instead (``docs/engine-safety.md``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import logging
import os
import signal
import time

log = logging.getLogger(__name__)

PARENT_NAME = "agentclash-sandboxes"
MOUNTINFO = "/proc/self/mountinfo"


@dataclasses.dataclass(frozen=True, slots=True)
class Layout:
    version: int  # 1 or 2
    memory: str  # parent directory in the memory hierarchy (v2: the unified one)
    pids: str | None  # v1 pids hierarchy parent, when mounted


def _mounts() -> list[tuple[str, str, list[str]]]:
    """(mount point, fs type, super options) of every cgroup mount."""
    found = []
    try:
        with open(MOUNTINFO) as fh:
            for line in fh:
                left, _, right = line.partition(" - ")
                fields, rfields = left.split(), right.split()
                if len(fields) >= 5 and len(rfields) >= 3 and rfields[0] in ("cgroup", "cgroup2"):
                    found.append((fields[4], rfields[0], rfields[2].split(",")))
    except OSError:
        pass
    return found


def _write(path: str, value: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CLOEXEC)
    try:
        os.write(fd, value.encode())
    finally:
        os.close(fd)


def _read(path: str) -> str:
    with open(path) as fh:
        return fh.read()


def _ensure_dir(path: str) -> None:
    with contextlib.suppress(FileExistsError):
        os.mkdir(path, 0o755)


def detect(parent: str = "auto") -> Layout | None:
    """Where sandbox cgroups go, or None when whole-sandbox caps through cgroups are unavailable.

    ``parent``: ``auto``, ``off``, or the path of a delegated cgroup-v2 directory (operator setting).
    """
    if parent == "off" or os.geteuid() != 0:
        return None
    mounts = _mounts()
    if parent != "auto":
        return _v2_layout(parent)
    for point, fstype, _ in mounts:
        if fstype == "cgroup2":
            layout = _v2_layout(os.path.join(point, PARENT_NAME), root=point)
            if layout is not None:
                return layout
    memory = next((p for p, t, o in mounts if t == "cgroup" and "memory" in o), None)
    pids = next((p for p, t, o in mounts if t == "cgroup" and "pids" in o), None)
    if memory is None:
        return None
    try:
        _ensure_dir(os.path.join(memory, PARENT_NAME))
        if pids is not None:
            _ensure_dir(os.path.join(pids, PARENT_NAME))
    except OSError as exc:
        log.info("cgroup v1 memory hierarchy is not writable (%s): using the RSS watchdog", exc.strerror)
        return None
    return Layout(1, os.path.join(memory, PARENT_NAME), os.path.join(pids, PARENT_NAME) if pids else None)


def _v2_layout(parent: str, root: str | None = None) -> Layout | None:
    try:
        if root is not None:
            if "memory" not in _read(os.path.join(root, "cgroup.subtree_control")).split():
                return None
            _ensure_dir(parent)
        wanted = [c for c in ("memory", "pids") if c in _read(os.path.join(parent, "cgroup.controllers")).split()]
        if "memory" not in wanted:
            return None
        enabled = _read(os.path.join(parent, "cgroup.subtree_control")).split()
        missing = [c for c in wanted if c not in enabled]
        if missing:
            _write(os.path.join(parent, "cgroup.subtree_control"), " ".join("+" + c for c in missing))
    except OSError:
        return None
    return Layout(2, parent, None)


class SandboxCgroup:
    """The cgroup(s) of one sandbox."""

    def __init__(self, layout: Layout, name: str) -> None:
        self.layout = layout
        self.paths = [os.path.join(layout.memory, name)]
        if layout.pids is not None:
            self.paths.append(os.path.join(layout.pids, name))
        self.memory = self.paths[0]

    def setup(self, memory_bytes: int, max_processes: int) -> None:
        for path in self.paths:
            _ensure_dir(path)
        if self.layout.version == 2:
            _write(os.path.join(self.memory, "memory.max"), str(memory_bytes))
            with contextlib.suppress(OSError):  # no swap accounting: nothing to cap
                _write(os.path.join(self.memory, "memory.swap.max"), "0")
            with contextlib.suppress(OSError):
                _write(os.path.join(self.memory, "pids.max"), str(max_processes))
            return
        _write(os.path.join(self.memory, "memory.limit_in_bytes"), str(memory_bytes))
        with contextlib.suppress(OSError):  # memsw exists only with swap accounting
            _write(os.path.join(self.memory, "memory.memsw.limit_in_bytes"), str(memory_bytes))
        if len(self.paths) > 1:
            _write(os.path.join(self.paths[1], "pids.max"), str(max_processes))

    def add(self, pid: int) -> None:
        for path in self.paths:
            _write(os.path.join(path, "cgroup.procs"), str(pid))

    def oom_kills(self) -> int:
        name = "memory.events" if self.layout.version == 2 else "memory.oom_control"
        try:
            for line in _read(os.path.join(self.memory, name)).splitlines():
                key, _, value = line.partition(" ")
                if key == "oom_kill":
                    return int(value)
        except (OSError, ValueError):
            pass
        return 0

    def kill(self) -> None:
        """SIGKILL every process in the sandbox's cgroup (the backstop when the launcher is stuck)."""
        kill_members(self.memory)

    def remove(self) -> None:
        self.kill()
        for path in self.paths:
            remove_dir(path)


def kill_members(path: str) -> None:
    """SIGKILL every process of the cgroup directory ``path``."""
    with contextlib.suppress(OSError):
        _write(os.path.join(path, "cgroup.kill"), "1")  # v2 ≥ 5.14: the kernel does it atomically
    pause = 0.0005  # killed processes leave cgroup.procs within ~1 ms: poll fast, then back off
    deadline = time.monotonic() + 0.5
    while True:
        try:
            pids = [int(p) for p in _read(os.path.join(path, "cgroup.procs")).split()]
        except (OSError, ValueError):
            return
        if not pids or time.monotonic() > deadline:
            return
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(pause)
        pause = min(pause * 2, 0.01)


def remove_dir(path: str, wait: float = 2.0) -> None:
    """rmdir a cgroup; its last processes may take a moment to be reaped."""
    deadline = time.monotonic() + wait
    while True:
        try:
            os.rmdir(path)
            return
        except FileNotFoundError:
            return
        except OSError as exc:
            if exc.errno != errno.EBUSY or time.monotonic() > deadline:
                log.warning("could not remove cgroup %s: %s", path, exc.strerror)
                return
            time.sleep(0.02)


_layout_cache: dict[str, Layout | None] = {}


def open_cgroup(name: str, *, memory_bytes: int, max_processes: int, parent: str = "auto") -> SandboxCgroup | None:
    """Create and configure the sandbox's cgroup, or None (fall back to the RSS watchdog)."""
    if parent not in _layout_cache:
        _layout_cache[parent] = detect(parent)
    layout = _layout_cache[parent]
    if layout is None:
        return None
    group = SandboxCgroup(layout, name)
    try:
        group.setup(memory_bytes, max_processes)
    except OSError as exc:
        log.warning("could not set up the sandbox cgroup (%s): using the RSS watchdog", exc.strerror)
        group.remove()
        return None
    return group


def stale_paths(name: str, parent: str = "auto") -> list[str]:
    """The cgroup directories a sandbox called ``name`` would have (for the stale-sandbox reaper)."""
    layout = _layout_cache.get(parent) if parent in _layout_cache else detect(parent)
    if layout is None:
        return []
    return [p for p in (os.path.join(layout.memory, name), os.path.join(layout.pids, name) if layout.pids else None) if p]

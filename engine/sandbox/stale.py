"""Sandboxes left behind by dead workers: find them and remove them (workspace, mounts, cgroups).

Every sandbox directory holds ``owner.json``: the worker's host name, boot id, pid and the pid's
start time (so a recycled pid is not mistaken for the owner). A worker calls
:func:`reap_stale_sandboxes` when it starts; it removes only sandboxes of this host whose owner
is gone, so workers sharing a ``SANDBOX_ROOT`` never remove each other's live sandboxes.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import socket
import time

from engine.sandbox import cgroup, mounts

log = logging.getLogger(__name__)

OWNER_FILE = "owner.json"
ORPHAN_AGE = 3600.0  # a sandbox directory without an owner file older than this is removed


def _boot_id() -> str:
    try:
        with open("/proc/sys/kernel/random/boot_id") as fh:
            return fh.read().strip()
    except OSError:
        return ""


def _start_time(pid: int) -> str | None:
    """The pid's start time in clock ticks since boot (field 22 of /proc/<pid>/stat), or None."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            data = fh.read()
    except OSError:
        return None
    return data.rpartition(")")[2].split()[19]


def owner_record() -> dict[str, object]:
    pid = os.getpid()
    return {"host": socket.gethostname(), "boot": _boot_id(), "pid": pid, "start": _start_time(pid)}


def write_owner(sandbox_dir: str) -> None:
    with open(os.path.join(sandbox_dir, OWNER_FILE), "w") as fh:
        json.dump(owner_record(), fh)


def owner_alive(record: dict[str, object]) -> bool:
    """False only when we can tell the owner is gone (same host; other boot, or pid/start differ)."""
    if record.get("host") != socket.gethostname():
        return True  # another machine's sandbox on a shared SANDBOX_ROOT: not ours to judge
    if record.get("boot") and record.get("boot") != _boot_id():
        return False
    pid = record.get("pid")
    if not isinstance(pid, int):
        return False
    return _start_time(pid) == record.get("start")


def remove_sandbox_dir(path: str, *, racing: bool = False) -> None:
    """Unmount whatever is mounted below ``path`` (its workspace tmpfs) and delete the tree.
    ``racing``: another process may be removing the same directory (the reaper), so a mount that
    is gone by the time it is unmounted is expected, not a warning."""
    for point in mounts.mounts_below(path):
        mounts.unmount(point, gone_ok=racing)
    shutil.rmtree(path, ignore_errors=True)  # fd-based on Linux: never follows links out


def reap_stale_sandboxes(base_dir: str, *, cgroup_parent: str = "auto") -> int:
    """Remove the sandboxes under ``base_dir`` whose worker is gone; returns how many."""
    try:
        names = [n for n in os.listdir(base_dir) if n.startswith("sbx-")]
    except OSError:
        return 0
    removed = 0
    now = time.time()
    for name in names:
        path = os.path.join(base_dir, name)
        try:
            with open(os.path.join(path, OWNER_FILE)) as fh:
                record = json.load(fh)
            dead = not owner_alive(record if isinstance(record, dict) else {})
        except FileNotFoundError:
            try:
                dead = now - os.lstat(path).st_mtime > ORPHAN_AGE
            except OSError:
                continue
        except (OSError, ValueError):
            dead = False
        if not dead:
            continue
        for group in cgroup.stale_paths(name, cgroup_parent):
            cgroup.kill_members(group)
            cgroup.remove_dir(group)
        remove_sandbox_dir(path, racing=True)
        removed += 1
        log.info("removed stale sandbox %s", path)
    return removed

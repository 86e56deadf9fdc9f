"""A size-capped tmpfs per workspace, so ``exec`` cannot write past ``max_workspace_bytes``.

Host-side writes are checked against the cap before they happen, but processes in the sandbox
write directly. A filesystem of the workspace's size makes the kernel enforce the cap for
everyone (``ENOSPC``), and its usage is one ``statvfs`` away. Mounting needs root on the worker;
elsewhere the sandbox falls back to measuring the workspace during and after every command
(``LocalSandbox``).
"""

from __future__ import annotations

import ctypes
import errno
import logging
import os

log = logging.getLogger(__name__)

MS_NOSUID = 0x2
MS_NODEV = 0x4
MNT_DETACH = 0x2
MAX_INODES = 262_144

_libc = ctypes.CDLL(None, use_errno=True)


def mount_workspace(path: str, size: int, uid: int | None, *, mode: int = 0o700) -> bool:
    """Mount a tmpfs of ``size`` bytes on ``path``; False when this worker may not mount."""
    if os.geteuid() != 0:
        return False
    owner = f",uid={uid},gid={uid}" if uid is not None else ""
    options = f"size={max(size, 4096)},nr_inodes={MAX_INODES},mode={mode:04o}{owner}"
    rc = _libc.mount(b"agentclash-workspace", os.fsencode(path), b"tmpfs", MS_NOSUID | MS_NODEV, options.encode())
    if rc != 0:
        err = ctypes.get_errno()
        log.info("cannot mount a tmpfs workspace (%s): measuring the workspace instead", os.strerror(err))
        return False
    return True


def unmount(path: str, *, gone_ok: bool = False) -> None:
    """Detach the mount at ``path``. ``gone_ok``: a path that is no longer a mount point (``EINVAL``)
    or no longer exists (``ENOENT``) is not worth a warning — another process removed it first
    (pool processes reaping the same dead sibling's sandbox at once, ``stale.py``)."""
    if _libc.umount2(os.fsencode(path), MNT_DETACH) != 0:
        err = ctypes.get_errno()
        if gone_ok and err in (errno.EINVAL, errno.ENOENT):
            log.debug("%s was unmounted already", path)
            return
        log.warning("could not unmount %s: %s", path, os.strerror(err))


def mounts_below(base: str) -> list[str]:
    """Mount points at or below ``base`` (deepest first), from /proc/self/mountinfo."""
    base = os.path.abspath(base).rstrip("/")
    found = []
    try:
        with open("/proc/self/mountinfo") as fh:
            for line in fh:
                fields = line.split()
                if len(fields) > 4:
                    point = fields[4].encode().decode("unicode_escape")  # \040 for spaces
                    if point == base or point.startswith(base + "/"):
                        found.append(point)
    except OSError:
        return []
    return sorted(found, key=len, reverse=True)

"""A read-only root skeleton shared by every sandbox: one bind instead of about twenty.

bubblewrap re-reads the whole mount table (``/proc/self/mountinfo``, host mounts included) after
every bind it makes, to re-apply ``nosuid``/``nodev``/``ro``; with eleven ``/etc`` binds, the
generated ``/etc/hosts``, the toolhost, the zygote's source, the jq/re2 bindings and the native
launcher, that was about a fifth of a sandbox's start (docs/performance.md, "A root skeleton").
Instead, what every sandbox of this worker sees the same is laid out once in a directory — the
mount points, the ``/bin``-style symlinks, copies of the ``/etc`` files, the tool files — and that
directory is bound read-only as ``/`` (``bwrap_argv``); only what differs per sandbox (its
``passwd``/``group``, ``/usr``, ``/proc``, ``/dev``, the tmpfs mounts, the workspace) is mounted
on top.

Rules:

- **Ours, and checked through the fd that is bound.** The skeleton lives in the launcher's
  directory (``SANDBOX_LAUNCHER_DIR``, trusted like the native launcher: ours, nobody else can
  write it, every parent searchable). Each sandbox start opens it ``O_PATH|O_NOFOLLOW`` and checks
  owner and mode on that fd, which bwrap then binds: no swap between the check and the bind.
- **Never mutated.** A skeleton's directory name is a digest of what it holds (the entries and a
  ``stat`` of every copied host file); anything that changes builds a new directory beside it
  (built under a temporary name, then renamed into place, so a concurrent builder in another
  pool process loses the race harmlessly). A running sandbox keeps the directory it was started
  with.
- **Fresh.** The host files are ``stat``-walked again at most every :data:`CHECK_INTERVAL`
  seconds per process (a changed ``/etc/ssl`` after a certificate update reaches new sandboxes
  within that time). Skeletons not used for :data:`KEEP_UNUSED` seconds are removed when a new
  one is built.
- **Nothing the sandbox could not read before.** Only entries readable and searchable by others
  are copied (``/etc/ssl/private`` is not); set-id bits and group/other write bits are dropped.
- **Says nothing about the host.** A sandbox sees the path of its ``/`` inside the host
  filesystem it came from (``/proc/self/mountinfo``'s root field), so a skeleton under the
  project (``/srv/agentclash/var/launcher/…``) would show the host's layout. Skeletons live in
  :func:`neutral_directory` instead — a directory named by a digest at the top of the host's
  ``/dev/shm`` tmpfs, which the sandbox sees as ``/<digest>/agentclash-root-<digest>`` — and in
  the launcher directory only when ``/dev/shm`` is missing, ``noexec`` or not ours to use.
- **Optional.** Without a launcher directory, or when the skeleton cannot be built, the caller
  binds every file as before (and the log says why, once; those binds show the launcher's and
  the jq/re2 modules' host paths).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import hashlib
import logging
import os
import shutil
import stat
import tempfile
import threading
import time

from engine.sandbox import native

log = logging.getLogger(__name__)

PREFIX = "agentclash-root-"
EGRESS_PREFIX = "egress-"  # a sandbox's egress socket directory in the neutral directory (local.py)
NEUTRAL_BASE = "/dev/shm"  # noqa: S108 - a tmpfs on Linux hosts, path says nothing of the host; our dir in it is checked ours
CHECK_INTERVAL = 5.0  # seconds between two stat walks of the copied host files, per process
KEEP_UNUSED = 24 * 3600.0  # an older skeleton not touched for this long is removed
FORMAT = b"1"  # bump when the layout's meaning changes


@dataclasses.dataclass(frozen=True, slots=True)
class Entry:
    """One path of the skeleton, absolute as the sandbox sees it.

    ``kind``: ``dir`` (an empty directory: a mount point), ``file`` (an empty file: a mount point),
    ``symlink`` (``source`` is the target), ``data`` (``source`` is the content, bytes),
    ``copy`` (``source`` is a host path: a file, a symlink or a directory tree), ``exec`` (a host
    file copied with mode 0755)."""

    dest: str
    kind: str
    source: str | bytes = ""


def _readable(st: os.stat_result) -> bool:
    if stat.S_ISLNK(st.st_mode):
        return True
    if stat.S_ISDIR(st.st_mode):
        return bool(st.st_mode & stat.S_IROTH and st.st_mode & stat.S_IXOTH)
    return stat.S_ISREG(st.st_mode) and bool(st.st_mode & stat.S_IROTH)


def _walk(path: str) -> list[tuple[str, os.stat_result]]:
    """``(relative path, lstat)`` of ``path`` and, for a directory, everything below it that
    :func:`_readable` lets through (an unreadable directory is skipped with its subtree)."""
    found: list[tuple[str, os.stat_result]] = []
    try:
        top = os.lstat(path)
    except OSError:
        return found
    if not _readable(top):
        return found
    found.append(("", top))
    if not stat.S_ISDIR(top.st_mode):
        return found
    stack = [""]
    while stack:
        rel = stack.pop()
        try:
            with os.scandir(os.path.join(path, rel)) as it:
                children = sorted((entry.name, entry.stat(follow_symlinks=False)) for entry in it)
        except OSError:
            continue
        for name, st in children:
            if not _readable(st):
                continue
            child = os.path.join(rel, name)
            found.append((child, st))
            if stat.S_ISDIR(st.st_mode):
                stack.append(child)
    return found


def _join(top: str, rel: str) -> str:
    return os.path.join(top, rel) if rel else top  # join(top, "") would add a "/": readlink fails


def _digest(entries: tuple[Entry, ...]) -> str:
    h = hashlib.sha256(FORMAT)
    for entry in entries:
        h.update(b"\0%s\0%s\0" % (entry.dest.encode(), entry.kind.encode()))
        if isinstance(entry.source, bytes):
            h.update(hashlib.sha256(entry.source).digest())
        else:
            h.update(entry.source.encode())
        if entry.kind in ("copy", "exec"):
            source = str(entry.source)
            for rel, st in _walk(source):
                target = os.readlink(_join(source, rel)) if stat.S_ISLNK(st.st_mode) else ""
                h.update(f"\0{rel}\0{st.st_mode}\0{st.st_size}\0{st.st_mtime_ns}\0{st.st_ino}\0{target}".encode())
    return h.hexdigest()[:20]


def _copy(source: str, dest: str) -> None:
    for rel, st in _walk(source):
        src, dst = _join(source, rel), _join(dest, rel)
        if stat.S_ISLNK(st.st_mode):
            os.symlink(os.readlink(src), dst)
        elif stat.S_ISDIR(st.st_mode):
            os.mkdir(dst, 0o755)
        else:
            with open(src, "rb") as fh_in, open(dst, "xb") as fh_out:
                shutil.copyfileobj(fh_in, fh_out)
            os.chmod(dst, stat.S_IMODE(st.st_mode) & 0o755)


def _copy_trusted(source: str, dest: str) -> None:
    """Copy the executable at ``source`` (the native launcher) only if it and its directory are
    ours and nobody else can write them, checked on the fds read (as ``native.open_trusted``)."""
    directory, name = os.path.split(os.path.abspath(source))
    dir_fd = os.open(directory, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        if not native._trusted_stat(os.fstat(dir_fd), directory=True):
            raise PermissionError(f"{directory} is not trusted (owner or mode)")
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)
    finally:
        os.close(dir_fd)
    with os.fdopen(fd, "rb") as fh_in:
        if not native._trusted_stat(os.fstat(fh_in.fileno()), directory=False):
            raise PermissionError(f"{source} is not trusted (owner or mode)")
        with open(dest, "xb") as fh_out:
            shutil.copyfileobj(fh_in, fh_out)
    os.chmod(dest, 0o755)  # noqa: S103 - an executable others may run, never write


def _build(directory: str, entries: tuple[Entry, ...], name: str) -> str:
    target = os.path.join(directory, name)
    tmp = tempfile.mkdtemp(prefix=".build-root-", dir=directory)
    try:
        os.chmod(tmp, 0o755)  # noqa: S103 - bwrap resolves the bind as the sandbox's uid: others search it, never write
        for entry in entries:
            dest = os.path.join(tmp, entry.dest.lstrip("/"))
            os.makedirs(os.path.dirname(dest), mode=0o755, exist_ok=True)
            if entry.kind == "dir":
                os.makedirs(dest, mode=0o755, exist_ok=True)
            elif entry.kind == "file":
                with open(dest, "xb"):
                    pass
                os.chmod(dest, 0o644)
            elif entry.kind == "symlink":
                os.symlink(str(entry.source), dest)
            elif entry.kind == "data":
                assert isinstance(entry.source, bytes)
                with open(dest, "xb") as fh:
                    fh.write(entry.source)
                os.chmod(dest, 0o644)
            elif entry.kind == "copy":
                _copy(str(entry.source), dest)
            elif entry.kind == "exec":
                _copy_trusted(str(entry.source), dest)
            else:
                raise ValueError(f"unknown skeleton entry kind {entry.kind!r}")
        try:
            os.rename(tmp, target)
        except OSError:
            if not os.path.isdir(target):  # a concurrent builder's copy of the same digest is as good
                raise
    finally:
        if os.path.exists(tmp):
            shutil.rmtree(tmp, ignore_errors=True)
    return target


def _prune(directory: str, keep: str) -> None:
    """Remove skeletons, and egress socket directories a crashed worker left (``local.py``), not
    used for :data:`KEEP_UNUSED` seconds."""
    now = time.time()
    with contextlib.suppress(OSError), os.scandir(directory) as it:
        for entry in it:
            if not entry.name.startswith((PREFIX, EGRESS_PREFIX)) or entry.path == keep:
                continue
            with contextlib.suppress(OSError):
                if now - entry.stat(follow_symlinks=False).st_mtime > KEEP_UNUSED:
                    shutil.rmtree(entry.path)


def _home(launcher_dir: str) -> str:
    """Where this launcher directory's skeletons live, decided once per process."""
    with _cache.lock:
        known = _cache.homes.get(launcher_dir)
    if known is None or not os.path.isdir(known):
        known = neutral_directory(launcher_dir) or launcher_dir
        with _cache.lock:
            _cache.homes[launcher_dir] = known
    return known


@functools.cache
def _warn_once(message: str) -> None:
    log.warning(message)


class _Cache:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.paths: dict[tuple[str, tuple[Entry, ...]], tuple[str, float]] = {}
        self.homes: dict[str, str] = {}


_cache = _Cache()


def neutral_directory(launcher_dir: str, base: str | None = None) -> str | None:
    """``<base>/<digest of the user and launcher directory>``, created ours and 0755, or None when
    ``base`` is missing, mounted ``noexec`` (the launcher runs from the skeleton) or the directory
    is not ours (another user made it first: the launcher directory is used instead)."""
    base = base or NEUTRAL_BASE
    try:
        if os.statvfs(base).f_flag & os.ST_NOEXEC:
            return None
    except OSError:
        return None
    name = hashlib.sha256(f"{os.geteuid()}\0{os.path.abspath(launcher_dir)}".encode()).hexdigest()[:16]
    path = os.path.join(base, name)
    with contextlib.suppress(FileExistsError, OSError):
        os.mkdir(path, 0o755)
    return path if native._trusted(path, directory=True) else None


def skeleton_path(directory: str, entries: tuple[Entry, ...]) -> str | None:
    """The current skeleton for ``entries`` (built if needed) in the neutral directory of the
    launcher directory ``directory``, else in ``directory`` itself; None without either."""
    if not directory or not native._trusted(directory, directory=True):
        return None
    directory = _home(directory)
    key = (directory, entries)
    now = time.monotonic()
    with _cache.lock:
        known = _cache.paths.get(key)
        if known is not None and now - known[1] < CHECK_INTERVAL:
            return known[0]
        try:
            name = PREFIX + _digest(entries)
            path = os.path.join(directory, name)
            if not os.path.isdir(path):
                path = _build(directory, entries, name)
                _prune(directory, path)
            else:
                os.utime(path)  # still in use: not pruned by a builder elsewhere
        except OSError as exc:
            _warn_once(f"sandbox root skeleton unavailable in {directory} ({exc}); binding each file instead")
            _cache.paths.pop(key, None)
            return None
        _cache.paths[key] = (path, now)
        return path


def open_skeleton(path: str) -> int | None:
    """An ``O_PATH`` fd of the skeleton at ``path``, checked on the fd itself (None if untrusted)."""
    try:
        fd = os.open(path, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    if native._trusted_stat(os.fstat(fd), directory=True):
        return fd
    os.close(fd)
    _warn_once(f"sandbox root skeleton at {path} is not trusted (owner or mode); binding each file instead")
    return None

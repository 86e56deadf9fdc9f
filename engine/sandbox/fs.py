"""Containment of agent paths inside the host directory that backs ``/workspace``.

Everything here works on file descriptors, never on host path strings, so a racing process in
the sandbox cannot redirect a host-side open (issue 14):

1. An agent path is cleaned lexically (:func:`agent_components`).
2. The open itself is ``openat2(root_fd, rel, RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
   RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV)``: the kernel refuses any symlink and any step out
   of the workspace. Without ``openat2`` (kernels before 5.6, or a seccomp profile that hides
   it) every directory is opened with ``O_NOFOLLOW`` from the previous one instead.
3. Only when that open meets a symlink is the path resolved (:func:`resolve`), one component at
   a time with ``fstatat``/``readlinkat`` relative to held directory fds. Symlinks are followed
   the way the kernel would follow them *inside* the sandbox (absolute targets are agent paths,
   so ``/workspace/x`` maps back into the root) and every step must stay inside; then the
   symlink-free result is opened as in 2. A link swapped in meanwhile makes that open fail.

Files are opened ``O_NONBLOCK`` (a FIFO cannot block the worker) and callers ``fstat`` the fd:
only regular files are read or written, and sizes are checked before reading.
"""

from __future__ import annotations

import ctypes
import errno
import os
import posixpath
import stat

from engine.sandbox.base import WORKSPACE, FileTooLargeError, WorkspacePathError

MAX_PATH_CHARS = 4096
MAX_COMPONENT_BYTES = 255
MAX_SYMLINKS = 40

SYS_OPENAT2 = 437  # the same number on x86-64 and arm64 (asm-generic)
RESOLVE_NO_XDEV = 0x01
RESOLVE_NO_MAGICLINKS = 0x02
RESOLVE_NO_SYMLINKS = 0x04
RESOLVE_BENEATH = 0x08
_RESOLVE = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV
_DIR_PATH = os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class _OpenHow(ctypes.Structure):
    _fields_ = [("flags", ctypes.c_uint64), ("mode", ctypes.c_uint64), ("resolve", ctypes.c_uint64)]


_libc = ctypes.CDLL(None, use_errno=True)
_syscall = _libc.syscall
_syscall.restype = ctypes.c_long
_openat2_works: bool | None = None


def _openat2(dir_fd: int, rel: str, flags: int, mode: int) -> int | None:
    """``openat2`` confined below ``dir_fd``; None when the kernel does not offer it."""
    global _openat2_works
    if _openat2_works is False:
        return None
    how = _OpenHow(flags, mode if flags & os.O_CREAT else 0, _RESOLVE)  # a mode without O_CREAT is EINVAL
    fd = _syscall(SYS_OPENAT2, ctypes.c_int(dir_fd), os.fsencode(rel), ctypes.byref(how), ctypes.c_size_t(ctypes.sizeof(how)))
    if fd >= 0:
        _openat2_works = True
        return int(fd)
    err = ctypes.get_errno()
    if err in (errno.ENOSYS, errno.EPERM) and _openat2_works is None:
        _openat2_works = False
        return None
    raise OSError(err, os.strerror(err), rel)


def agent_components(raw: str) -> list[str]:
    """Lexically clean an agent path and return its components below /workspace."""
    if not isinstance(raw, str):
        raise WorkspacePathError(str(raw))
    path = raw.strip()
    if "\x00" in path or len(path) > MAX_PATH_CHARS:
        raise WorkspacePathError(raw)
    if not path:
        path = WORKSPACE
    if not path.startswith("/"):
        path = WORKSPACE + "/" + path
    cleaned = posixpath.normpath(path)
    if cleaned.startswith("//"):
        cleaned = "/" + cleaned.lstrip("/")
    if cleaned != WORKSPACE and not cleaned.startswith(WORKSPACE + "/"):
        raise WorkspacePathError(raw)
    parts = [p for p in cleaned[len(WORKSPACE) :].split("/") if p]
    for part in parts:
        if len(part.encode("utf-8", "surrogateescape")) > MAX_COMPONENT_BYTES:
            raise WorkspacePathError(raw)
    return parts


def agent_path(parts: list[str]) -> str:
    return WORKSPACE + ("/" + "/".join(parts) if parts else "")


def open_beneath(root_fd: int, parts: list[str], flags: int, mode: int = 0o644) -> int:
    """Open the symlink-free relative path ``parts`` below ``root_fd`` without following any link.

    Raises OSError: ELOOP when a component is a symlink, ENOENT, ENOTDIR… as the kernel reports.
    """
    flags |= os.O_NOFOLLOW | os.O_CLOEXEC
    rel = "/".join(parts) if parts else "."
    fd = _openat2(root_fd, rel, flags, mode)
    if fd is not None:
        return fd
    dfd = root_fd
    owned = -1
    try:
        for part in parts[:-1]:
            nfd = os.open(part, _DIR_PATH, dir_fd=dfd)
            if owned >= 0:
                os.close(owned)
            dfd = owned = nfd
        return os.open(parts[-1] if parts else ".", flags, mode, dir_fd=dfd)
    finally:
        if owned >= 0:
            os.close(owned)


def _link_target(part: str, dfd: int, raw: str) -> str | None:
    """The target of the link ``part``; None when it is no longer a link (the agent replaced or
    removed it between its ``stat`` and this read)."""
    try:
        target = os.readlink(part, dir_fd=dfd)
    except OSError as exc:
        if exc.errno in (errno.EINVAL, errno.ENOENT):
            return None
        raise
    if "\x00" in target:
        raise WorkspacePathError(raw)
    return target


def resolve(root_fd: int, raw: str) -> list[str]:
    """Resolve ``raw`` to symlink-free components below ``root_fd`` (the tail may not exist)."""
    pending = agent_components(raw)
    resolved: list[str] = []
    fds: list[int] = []  # O_PATH fds of the resolved directories
    links = 0
    try:
        while pending:
            part = pending.pop(0)
            dfd = fds[-1] if fds else root_fd
            try:
                st = os.stat(part, dir_fd=dfd, follow_symlinks=False)
            except (FileNotFoundError, NotADirectoryError):
                resolved += [part, *pending]
                break
            except OSError as exc:
                if exc.errno == errno.ENAMETOOLONG:
                    raise WorkspacePathError(raw) from exc
                raise
            if stat.S_ISLNK(st.st_mode):
                links += 1
                if links > MAX_SYMLINKS:
                    raise WorkspacePathError(raw)
                target = _link_target(part, dfd, raw)
                if target is None:  # replaced or removed since the stat: look again (counted as a
                    pending.insert(0, part)  # link above, so a racer cannot keep this going)
                    continue
                base = target if target.startswith("/") else agent_path(resolved) + "/" + target
                cleaned = posixpath.normpath(base)
                if cleaned.startswith("//"):
                    cleaned = "/" + cleaned.lstrip("/")
                if cleaned != WORKSPACE and not cleaned.startswith(WORKSPACE + "/"):
                    raise WorkspacePathError(raw)
                pending = [p for p in cleaned[len(WORKSPACE) :].split("/") if p] + pending
                resolved = []
                for f in fds:
                    os.close(f)
                fds = []
                continue
            resolved.append(part)
            if pending:
                if not stat.S_ISDIR(st.st_mode):
                    resolved += pending  # the open will fail with ENOTDIR
                    break
                fds.append(os.open(part, _DIR_PATH, dir_fd=dfd))
    finally:
        for f in fds:
            os.close(f)
    return resolved


def _contained_open(root_fd: int, raw: str, flags: int, mode: int, make_parents: int | bool | None = False) -> tuple[int, list[str]]:
    parts = agent_components(raw)
    try:
        return open_beneath(root_fd, parts, flags, mode), parts
    except OSError as exc:
        if exc.errno not in (errno.ELOOP, errno.ENOENT, errno.ENOTDIR, errno.EXDEV):  # O_DIRECTORY on a link: ENOTDIR
            raise
        if exc.errno == errno.EXDEV:
            raise WorkspacePathError(raw) from exc
    parts = resolve(root_fd, raw)  # links inside the workspace are followed; escapes refused
    if make_parents is not False and len(parts) > 1:
        make_dirs(root_fd, parts[:-1], raw, None if make_parents is True else make_parents)
    try:
        return open_beneath(root_fd, parts, flags, mode), parts
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.EXDEV):  # swapped while we looked
            raise WorkspacePathError(raw) from exc
        raise


def make_dirs(root_fd: int, parts: list[str], raw: str, owner: int | None) -> None:
    """Create missing directories of ``parts`` below ``root_fd`` (owned by ``owner``), never following links."""
    dfd, owned = root_fd, -1
    try:
        for part in parts:
            try:
                nfd = os.open(part, _DIR_PATH, dir_fd=dfd)
            except FileNotFoundError:
                os.mkdir(part, 0o755, dir_fd=dfd)
                if owner is not None:
                    os.chown(part, owner, owner, dir_fd=dfd, follow_symlinks=False)
                nfd = os.open(part, _DIR_PATH, dir_fd=dfd)
            except OSError as exc:
                if exc.errno == errno.ELOOP:
                    raise WorkspacePathError(raw) from exc
                raise
            if owned >= 0:
                os.close(owned)
            dfd = owned = nfd
    finally:
        if owned >= 0:
            os.close(owned)


def open_file(root_fd: int, raw: str, flags: int, mode: int = 0o644, make_parents: int | bool | None = False) -> tuple[int, list[str]]:
    """Open a contained file (``O_NONBLOCK``); returns (fd, resolved components).

    ``make_parents``: False, or the uid to own created parent directories (None: the caller's).
    """
    fd, parts = _contained_open(root_fd, raw, flags | os.O_NONBLOCK, mode, make_parents)
    if not parts:
        os.close(fd)
        raise IsADirectoryError(errno.EISDIR, "is a directory", raw)
    return fd, parts


def open_dir(root_fd: int, raw: str) -> tuple[int, list[str]]:
    """A readable directory fd of a contained directory; returns (fd, resolved components)."""
    return _contained_open(root_fd, raw, os.O_RDONLY | os.O_DIRECTORY, 0)


def open_root(root: str) -> int:
    return os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)


def read_regular(fd: int, raw: str, limit: int) -> bytes:
    """Read a regular file through ``fd``: its size is checked before reading (FileTooLargeError)."""
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        raise IsADirectoryError(errno.EISDIR, "not a regular file", raw)
    if st.st_size > limit:
        raise FileTooLargeError(raw, st.st_size, limit)
    chunks: list[bytes] = []
    size = 0
    while True:
        chunk = os.read(fd, min(max(st.st_size + 1, 65536), limit + 1 - size))
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        size += len(chunk)
        if size > limit:  # it grew while we read
            raise FileTooLargeError(raw, size, limit)


def tree_bytes(root_fd: int) -> int:
    """Disk blocks used below ``root_fd`` (fd-based walk; links are not followed)."""
    total = 0
    for _, dirnames, filenames, dfd in os.fwalk(".", dir_fd=root_fd):
        for name in filenames + dirnames:
            try:
                total += os.stat(name, dir_fd=dfd, follow_symlinks=False).st_blocks * 512
            except OSError:
                pass
    return total


def host_path(root: str, root_fd: int, raw: str) -> str:
    """Host path of a contained location. For tests and staging only: never hand it to a library
    that opens agent-controlled paths as root."""
    return os.path.join(root, *resolve(root_fd, raw))

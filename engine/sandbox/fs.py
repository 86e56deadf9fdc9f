"""Containment of agent paths inside the host directory that backs ``/workspace``.

Agent paths are resolved component by component against the workspace root. Symlinks are
followed the way the kernel would inside the sandbox (absolute targets are agent paths, so
``/workspace/x`` maps back into the root), and every intermediate step must stay inside.
The final open is done with dir fds and ``O_NOFOLLOW`` on the resolved, symlink-free path,
so a link swapped in after resolution makes the open fail instead of escaping.
"""

from __future__ import annotations

import errno
import os
import posixpath
import stat

from engine.sandbox.base import WORKSPACE, WorkspacePathError

MAX_PATH_CHARS = 4096
MAX_COMPONENT_BYTES = 255
MAX_SYMLINKS = 40


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


def resolve(root: str, raw: str) -> list[str]:
    """Resolve ``raw`` to symlink-free components under ``root`` (the tail may not exist)."""
    pending = agent_components(raw)
    resolved: list[str] = []
    links = 0
    while pending:
        part = pending.pop(0)
        if part == "..":
            if not resolved:
                raise WorkspacePathError(raw)
            resolved.pop()
            continue
        if part == ".":
            continue
        host = os.path.join(root, *resolved, part)
        try:
            st = os.lstat(host)
        except FileNotFoundError:
            resolved.append(part)
            continue
        except NotADirectoryError:
            resolved.append(part)
            continue
        except OSError as exc:
            if exc.errno == errno.ENAMETOOLONG:
                raise WorkspacePathError(raw) from exc
            raise
        if stat.S_ISLNK(st.st_mode):
            links += 1
            if links > MAX_SYMLINKS:
                raise WorkspacePathError(raw)
            target = os.readlink(host)
            if "\x00" in target:
                raise WorkspacePathError(raw)
            if target.startswith("/"):
                base = target
            else:
                base = agent_path(resolved) + "/" + target
            cleaned = posixpath.normpath(base)
            if cleaned != WORKSPACE and not cleaned.startswith(WORKSPACE + "/"):
                raise WorkspacePathError(raw)
            pending = [p for p in cleaned[len(WORKSPACE) :].split("/") if p] + pending
            resolved = []
            continue
        resolved.append(part)
    return resolved


def _open_dir_chain(root_fd: int, parts: list[str], raw: str, create: bool) -> int:
    fd = os.dup(root_fd)
    try:
        for part in parts:
            flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
            try:
                nfd = os.open(part, flags, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    raise
                os.mkdir(part, 0o755, dir_fd=fd)
                nfd = os.open(part, flags, dir_fd=fd)
            except OSError as exc:
                if exc.errno in (errno.ELOOP,):
                    raise WorkspacePathError(raw) from exc
                raise
            os.close(fd)
            fd = nfd
        return fd
    except BaseException:
        os.close(fd)
        raise


def open_root(root: str) -> int:
    return os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)


def open_file(
    root: str, raw: str, flags: int, mode: int = 0o644, create_parents: bool = False, root_fd: int | None = None
) -> tuple[int, list[str]]:
    """Open a contained file; returns (fd, resolved components)."""
    parts = resolve(root, raw)
    if not parts:
        raise IsADirectoryError(errno.EISDIR, "is a directory", raw)
    if root_fd is not None and len(parts) == 1:
        dfd = os.dup(root_fd)
    else:
        own = open_root(root) if root_fd is None else root_fd
        try:
            dfd = _open_dir_chain(own, parts[:-1], raw, create_parents)
        finally:
            if root_fd is None:
                os.close(own)
    try:
        try:
            fd = os.open(parts[-1], flags | os.O_NOFOLLOW | os.O_CLOEXEC, mode, dir_fd=dfd)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise WorkspacePathError(raw) from exc
            raise
    finally:
        os.close(dfd)
    return fd, parts


def open_dir(root: str, raw: str) -> tuple[int, list[str]]:
    parts = resolve(root, raw)
    root_fd = open_root(root)
    try:
        return _open_dir_chain(root_fd, parts, raw, False), parts
    finally:
        os.close(root_fd)


def host_path(root: str, raw: str) -> str:
    """Host path of a contained, symlink-free location (for APIs that need a filename)."""
    return os.path.join(root, *resolve(root, raw))

"""The native sandbox launcher (``launcher.c``): where its binary lives, how it is built and trusted.

It is the PID 1 of every sandbox; there is no other (docs/engine-safety.md "The native
launcher"). The binary is never committed: ``make setup`` builds it (:func:`main`, ``DIR`` =
``var/launcher``) and fails when it cannot, and a worker builds it on first use when it is
missing and a C compiler is there. Its name carries a digest of the source and the compiler flags,
so a changed ``launcher.c`` is never served by an old binary. A binary is used only if it and its
directory belong to this user and nobody else can write them (a planted binary would be PID 1 of
every sandbox); otherwise :func:`require_binary` raises :class:`LauncherUnavailable` with the
reason, and no sandbox starts.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import threading

log = logging.getLogger(__name__)

SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "launcher.c")
WARNINGS = ("-Wall", "-Wextra", "-Wshadow", "-Wformat=2")  # the tests also compile it with -Werror
HARDENING = ("-O2", "-fstack-protector-strong", "-D_FORTIFY_SOURCE=2", "-Wl,-z,relro,-z,now")
# Static first: no dynamic loader to run at each sandbox start; PIE either way.
LINK_MODES = (("-static-pie", "-fPIE"), ("-fPIE", "-pie"))
BUILD_TIMEOUT = 120
# Used when SandboxSettings.launcher_dir is empty (engine-only callers and the engine's tests).
DEFAULT_DIR = ""
_lock = threading.Lock()


@functools.cache
def source_digest() -> str:
    """Read once per process: a sandbox start looks the binary up by this name."""
    with open(SOURCE, "rb") as fh:
        data = fh.read()
    flags = " ".join(WARNINGS + HARDENING + tuple(f for mode in LINK_MODES for f in mode))
    return hashlib.sha256(data + b"\0" + flags.encode()).hexdigest()[:16]


def binary_name() -> str:
    return f"agentclash-launcher-{source_digest()}"


def _trusted_stat(st: os.stat_result, *, directory: bool) -> bool:
    kind_ok = stat.S_ISDIR(st.st_mode) if directory else stat.S_ISREG(st.st_mode)
    return kind_ok and st.st_uid == os.geteuid() and not st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)


def _trusted(path: str, *, directory: bool) -> bool:
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return _trusted_stat(st, directory=directory)


def open_trusted(path: str) -> int | None:
    """An ``O_PATH`` fd of the binary at ``path``, checked through the fds themselves (None if untrusted).

    bwrap binds this fd (``--ro-bind-fd``), so what runs as PID 1 is the file checked here, not
    whatever the path names later: :func:`launcher_binary` checks by path, and anyone who can write
    a directory above it could swap the path between that check and the bind. The directory is
    opened without following a final symlink and checked, then the binary inside it (no symlink)."""
    directory, name = os.path.split(os.path.abspath(path))
    try:
        dir_fd = os.open(directory, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        if not _trusted_stat(os.fstat(dir_fd), directory=True):
            return None
        fd = os.open(name, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)
    except OSError:
        return None
    finally:
        os.close(dir_fd)
    if _trusted_stat(os.fstat(fd), directory=False):
        return fd
    os.close(fd)
    return None


def _reachable(path: str) -> bool:
    """Every directory above ``path`` is searchable by others: bubblewrap, running as the sandbox's
    own uid, resolves the binary's bind source by path."""
    parent = os.path.dirname(os.path.abspath(path))
    while True:
        try:
            if not os.stat(parent).st_mode & stat.S_IXOTH:
                return False
        except FileNotFoundError:
            pass  # not made yet: build() creates it 0755 (checked again once built)
        except OSError:
            return False
        if parent == "/":
            return True
        parent = os.path.dirname(parent)


def compiler() -> str | None:
    return shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")


def build(directory: str) -> str:
    """Compile ``launcher.c`` into ``directory`` (created 0755) and return the binary's path.

    Raises ``RuntimeError`` with the compiler's message when it cannot be built."""
    cc = compiler()
    if cc is None:
        raise RuntimeError("no C compiler (cc, gcc or clang) on PATH")
    os.makedirs(directory, mode=0o755, exist_ok=True)  # searchable: bwrap resolves the bind source as the sandbox uid
    if not _trusted(directory, directory=True):
        raise RuntimeError(f"{directory} must belong to this user and not be writable by others")
    target = os.path.join(directory, binary_name())
    errors = []
    for mode in LINK_MODES:
        fd, tmp = tempfile.mkstemp(prefix=".build-", dir=directory)
        os.close(fd)
        try:
            argv = [cc, *WARNINGS, *HARDENING, *mode, "-o", tmp, SOURCE]
            proc = subprocess.run(argv, capture_output=True, text=True, timeout=BUILD_TIMEOUT, check=False)
            if proc.returncode == 0:
                os.chmod(tmp, 0o755)  # noqa: S103 - an executable others may run, never write
                os.replace(tmp, target)  # atomic: a concurrent builder's copy is the same bytes
                return target
            errors.append(proc.stderr.strip()[-2000:])
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
    raise RuntimeError("could not build the native launcher: " + " | ".join(errors))


@functools.cache
def _warn_once(message: str) -> None:
    log.error(message)


class LauncherUnavailable(RuntimeError):
    """No trusted native launcher (the message says why): no sandbox can start."""


def require_binary(directory: str, *, build_missing: bool = True) -> str:
    """The trusted native launcher for the current source, building it if allowed and missing.

    Raises :class:`LauncherUnavailable` with the reason (also logged once, as an error) when there
    is none: no directory, a directory the sandbox's uid cannot walk to, a binary or directory
    others could write, or a build that failed (no C compiler: ``make setup`` says so too)."""
    directory = directory or DEFAULT_DIR
    if not directory:
        raise LauncherUnavailable("no launcher directory (SANDBOX_LAUNCHER_DIR) is configured")
    path = os.path.join(directory, binary_name())
    if not _reachable(path):
        raise _unavailable(f"{directory} is not reachable by the sandbox's uid (a parent is not o+x)")
    if _trusted(directory, directory=True) and _trusted(path, directory=False):
        return path
    if os.path.lexists(path) or (os.path.lexists(directory) and not _trusted(directory, directory=True)):
        raise _unavailable(f"{path} is not trusted (owner or mode: it and its directory must be ours, writable by nobody else)")
    if not build_missing:
        raise LauncherUnavailable(f"{path} is not built (make setup)")
    with _lock:
        if _trusted(path, directory=False):
            return path
        try:
            built = build(directory)
            if not _reachable(built):  # a umask took the others' search bit off a new directory
                raise RuntimeError(f"{directory} is not reachable by the sandbox's uid (a parent is not o+x)")
            return built
        except (RuntimeError, OSError, subprocess.TimeoutExpired) as exc:
            raise _unavailable(str(exc)) from None


def _unavailable(reason: str) -> LauncherUnavailable:
    _warn_once(f"native sandbox launcher unavailable: {reason}; sandboxes cannot start")
    return LauncherUnavailable(reason)


def launcher_binary(directory: str, *, build_missing: bool = True) -> str | None:
    """:func:`require_binary`, or None when there is none (the reason is logged once)."""
    try:
        return require_binary(directory, build_missing=build_missing)
    except LauncherUnavailable:
        return None


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: main([DIRECTORY])", file=sys.stderr)
        return 2
    existing = os.path.join(argv[0], binary_name())
    if _trusted(argv[0], directory=True) and _trusted(existing, directory=False):
        print(existing)
        return 0
    try:
        path = build(argv[0])
    except (RuntimeError, OSError, subprocess.TimeoutExpired) as exc:
        print(
            f"native sandbox launcher not built: {exc}\n"
            "It is every sandbox's PID 1: without it no sandboxed tool can run. Install a C compiler "
            "(e.g. apt-get install gcc libc6-dev) and run make setup again.",
            file=sys.stderr,
        )
        return 1
    for name in os.listdir(argv[0]):  # binaries of earlier sources (setup runs between deployments)
        if name.startswith("agentclash-launcher-") and os.path.join(argv[0], name) != path:
            os.unlink(os.path.join(argv[0], name))
    print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

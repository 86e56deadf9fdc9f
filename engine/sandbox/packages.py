"""``sandbox.additional_packages``: Debian packages as a read-only layer bound into the sandbox.

A pack that needs ``tree`` must not fail as if its agent had failed. The packages a pack (or its
sandbox template) names, with the dependencies the host does not already have, are fetched with
``apt-get download`` and unpacked with ``dpkg-deb -x`` into a directory of the worker's cache,
once per (package set, architecture): the layer's name is a digest of both. The layer is built
by the worker (or ``manage.py sandbox_packages_build``), never inside a sandbox and never with the
packages' maintainer scripts; it is made read-only and bound read-only at :data:`PACKAGES_MOUNT`,
its ``bin`` directories after the system's in ``PATH`` (a package cannot shadow a system program)
and its library directories in ``LD_LIBRARY_PATH`` (a binary finds the libraries its package's
dependencies brought). Of what maintainer scripts do, the one a command needs to be found is
redone: the links ``update-alternatives --install`` would make (``nc`` for ``netcat-openbsd``),
read from ``postinst`` and pointed into the layer. Users, groups, ``ldconfig``, generated files
and services are not (docs/operations.md says what that means for packs).

Rules (docs/operations.md, "Sandbox packages"):

- the operator's allowlist (empty = any package) and denylist are checked first, by name;
- a package apt does not know is a :class:`PackageError` naming it, raised at run creation
  (pre-flight) and never as an agent failure;
- a layer bigger than ``max_layer_bytes`` is refused; the cache keeps at most ``max_cache_bytes``,
  removing the least recently used layers (a layer in use stays valid: its sandbox keeps its
  mount);
- built under a temporary name, then renamed into place, so a concurrent builder loses the race
  harmlessly and a half-built layer is never bound.
"""

from __future__ import annotations

import dataclasses
import fcntl
import hashlib
import os
import re
import shlex
import shutil
import stat
import subprocess
import tempfile
from collections.abc import Iterable

from engine.sandbox.env import SANDBOX_PATH
from engine.types import EngineError

PACKAGES_MOUNT = "/opt/agentclash/packages"
PACKAGE_RE = re.compile(r"[a-z0-9][a-z0-9.+\-]+\Z")
APT_TIMEOUT = 300.0
PREFIX = "layer-"
FORMAT = b"1"  # bump when the layout's meaning changes
_LIB_DIRS = ("usr/lib/{triplet}", "lib/{triplet}", "usr/lib", "lib")
_BIN_DIRS = ("usr/local/bin", "usr/bin", "bin", "usr/sbin", "sbin")
_TRIPLETS = {"amd64": "x86_64-linux-gnu", "arm64": "aarch64-linux-gnu", "i386": "i386-linux-gnu", "armhf": "arm-linux-gnueabihf"}


class PackageError(EngineError):
    """A package this installation cannot provide; ``package`` names it ("" for the set)."""

    def __init__(self, package: str, message: str) -> None:
        super().__init__(message)
        self.package = package
        self.message = message


@dataclasses.dataclass(frozen=True, slots=True)
class PackagePolicy:
    """Operator settings (``SANDBOX_PACKAGES_*``), passed in as plain values."""

    cache_dir: str
    allow: frozenset[str] = frozenset()  # empty: any package apt knows
    deny: frozenset[str] = frozenset()
    max_layer_bytes: int = 512 * 1024 * 1024
    max_cache_bytes: int = 4 * 1024 * 1024 * 1024
    enabled: bool = True


def normalise(packages: Iterable[str]) -> tuple[str, ...]:
    """Sorted, without duplicates or blanks: one layer per set, whatever order the pack wrote."""
    return tuple(sorted({str(p).strip().lower() for p in packages if str(p).strip()}))


def check_policy(packages: Iterable[str], policy: PackagePolicy) -> None:
    """Refuse, naming the first offender, what the operator does not allow (no apt call)."""
    names = normalise(packages)
    if names and not policy.enabled:
        raise PackageError(names[0], "this installation does not install additional packages (SANDBOX_PACKAGES_ENABLED is off)")
    for name in names:
        if not PACKAGE_RE.match(name):
            raise PackageError(name, f'"{name}" is not a valid apt package name')
        if name in policy.deny:
            raise PackageError(name, f'"{name}" is on this installation\'s package denylist')
        if policy.allow and name not in policy.allow:
            raise PackageError(name, f'"{name}" is not on this installation\'s package allowlist')


def architecture() -> str:
    try:
        out = subprocess.run(["dpkg", "--print-architecture"], capture_output=True, text=True, timeout=30, check=True)
    except (OSError, subprocess.SubprocessError) as exc:
        raise PackageError("", "this installation cannot install packages (dpkg is unavailable)") from exc
    return out.stdout.strip()


def _host_installed() -> frozenset[str]:
    try:
        out = subprocess.run(
            ["dpkg-query", "-W", "-f=${Package} ${db:Status-Status}\\n"],
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        raise PackageError("", "this installation cannot install packages (dpkg-query is unavailable)") from exc
    return frozenset(line.split()[0] for line in out.stdout.splitlines() if line.endswith(" installed"))


def resolve(packages: Iterable[str]) -> tuple[str, ...]:
    """The packages to fetch: the named ones and their (pre-)dependencies, minus what the host has
    installed (the sandbox sees the host's ``/usr``). Raises :class:`PackageError` naming a
    package apt does not know."""
    names = normalise(packages)
    if not names:
        return ()
    for name in names:
        try:
            shown = subprocess.run(["apt-cache", "show", "--no-all-versions", name], capture_output=True, text=True, timeout=60)
        except (OSError, subprocess.SubprocessError) as exc:
            raise PackageError(name, "this installation cannot install packages (apt-cache is unavailable)") from exc
        if shown.returncode != 0 or "Filename:" not in shown.stdout:
            raise PackageError(name, f'"{name}" is not a package this installation\'s apt sources provide')
    try:
        out = subprocess.run(
            ["apt-cache", "depends", "--recurse", "--no-recommends", "--no-suggests", "--no-conflicts",
             "--no-breaks", "--no-replaces", "--no-enhances", *names],
            capture_output=True, text=True, timeout=APT_TIMEOUT, check=True,
        )  # fmt: skip
    except (OSError, subprocess.SubprocessError) as exc:
        raise PackageError(names[0], f"the dependencies of {', '.join(names)} cannot be resolved") from exc
    wanted = {line.strip().split(":")[0] for line in out.stdout.splitlines() if line and not line[0].isspace() and not line.startswith("<")}
    installed = _host_installed()
    return tuple(sorted(p for p in wanted | set(names) if p not in installed))


def layer_key(packages: Iterable[str], arch: str) -> str:
    h = hashlib.sha256(FORMAT + b"\0" + arch.encode() + b"\0" + "\0".join(normalise(packages)).encode())
    return h.hexdigest()[:32]


def layer_env(layer_root: str | None = None) -> dict[str, str]:
    """``PATH`` and ``LD_LIBRARY_PATH`` for a sandbox with a layer (the system's directories first)."""
    arch_dirs = [d.format(triplet=t) for t in _TRIPLETS.values() for d in _LIB_DIRS[:2]] + list(_LIB_DIRS[2:])
    libs = [f"{PACKAGES_MOUNT}/{d}" for d in arch_dirs if layer_root is None or os.path.isdir(os.path.join(layer_root, d))]
    bins = [f"{PACKAGES_MOUNT}/{d}" for d in _BIN_DIRS]
    env = {"PATH": ":".join([SANDBOX_PATH, *bins])}
    if libs:
        env["LD_LIBRARY_PATH"] = ":".join(libs)
    return env


def ensure_layer(packages: Iterable[str], policy: PackagePolicy) -> str:
    """The host path of the read-only layer holding ``packages`` (built now if missing)."""
    names = normalise(packages)
    check_policy(names, policy)
    arch = architecture()
    final = os.path.join(policy.cache_dir, PREFIX + layer_key(names, arch))
    root = os.path.join(final, "root")
    if os.path.isdir(root):
        os.utime(final)  # least recently used goes first
        return root
    os.makedirs(policy.cache_dir, mode=0o755, exist_ok=True)
    with open(os.path.join(policy.cache_dir, ".lock"), "a+") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one builder per cache: apt's own lists are shared too
        if not os.path.isdir(root):
            _build(names, policy, final)
        _evict(policy, keep=final)
    return root


def _build(names: tuple[str, ...], policy: PackagePolicy, final: str) -> None:
    fetch = resolve(names)
    tmp = tempfile.mkdtemp(prefix=".build-", dir=policy.cache_dir)
    try:
        debs, root = os.path.join(tmp, "debs"), os.path.join(tmp, "root")
        os.makedirs(debs)
        os.makedirs(root)
        os.chmod(debs, 0o777)  # noqa: S103 - apt-get download drops to the _apt user to write here
        if fetch:
            _download(fetch, names, debs)
        for deb in sorted(os.listdir(debs)):
            subprocess.run(["dpkg-deb", "-x", os.path.join(debs, deb), root], check=True, timeout=APT_TIMEOUT, capture_output=True)
            _link_alternatives(os.path.join(debs, deb), root, os.path.join(tmp, "control"))
        size = _seal(root)
        if size > policy.max_layer_bytes:
            raise PackageError(names[0], f"{', '.join(names)} take {size} bytes unpacked, more than this installation allows per sandbox")
        shutil.rmtree(debs)
        os.chmod(tmp, 0o755)  # noqa: S103 - the layer is bound by the sandbox's uid, which must search it
        try:
            os.rename(tmp, final)
        except OSError:
            if not os.path.isdir(os.path.join(final, "root")):
                raise
    finally:
        if os.path.exists(tmp):
            _remove(tmp)


def _link_alternatives(deb: str, root: str, scratch: str) -> None:
    """What ``update-alternatives --install`` in the package's ``postinst`` would have made: its
    link (``/bin/nc``) and ``--slave`` links, pointing into the layer, when the target is in the
    layer and the link is not. Only literal absolute paths; no other maintainer script is run."""
    shutil.rmtree(scratch, ignore_errors=True)
    subprocess.run(["dpkg-deb", "-e", deb, scratch], check=True, timeout=APT_TIMEOUT, capture_output=True)
    for link, target in alternative_links(_read_text(os.path.join(scratch, "postinst"))):
        inside, path = os.path.join(root, link.lstrip("/")), os.path.join(root, target.lstrip("/"))
        if os.path.lexists(inside) or not os.path.lexists(path) or not os.path.realpath(inside).startswith(os.path.realpath(root) + "/"):
            continue
        os.makedirs(os.path.dirname(inside), exist_ok=True)
        os.symlink(PACKAGES_MOUNT + target, inside)


def _read_text(path: str) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return handle.read(1 << 20)
    except OSError:
        return ""


def alternative_links(script: str) -> list[tuple[str, str]]:
    """``(link, target)`` of each ``--install``/``--slave`` of ``update-alternatives`` in a shell
    script, for literal absolute paths (a path built from shell variables is skipped)."""
    links: list[tuple[str, str]] = []
    for line in script.replace("\\\n", " ").splitlines():
        if "update-alternatives" not in line:
            continue
        try:
            words = shlex.split(line, comments=True)
        except ValueError:
            continue
        for i, word in enumerate(words):
            if word in ("--install", "--slave") and i + 3 < len(words):
                link, target = words[i + 1], words[i + 3]  # --install LINK NAME PATH PRIORITY, --slave LINK NAME PATH
                if all(p.startswith("/") and "$" not in p and ".." not in p.split("/") for p in (link, target)):
                    links.append((link, target))
    return links


def _download(fetch: tuple[str, ...], names: tuple[str, ...], debs: str) -> None:
    got = subprocess.run(["apt-get", "download", "-q", *fetch], cwd=debs, capture_output=True, text=True, timeout=APT_TIMEOUT)
    if got.returncode != 0:
        missing = next((n for n in names if n in got.stderr), names[0])
        raise PackageError(missing, f'"{missing}" could not be downloaded: {got.stderr.strip()[-300:]}')


def _seal(root: str) -> int:
    """Drop write and set-id bits everywhere (the layer is never written again); its size."""
    total = 0
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = os.path.join(dirpath, name)
            st = os.lstat(path)
            if stat.S_ISLNK(st.st_mode):
                continue
            total += st.st_size
            os.chmod(path, stat.S_IMODE(st.st_mode) & 0o555 | (0o555 if stat.S_ISDIR(st.st_mode) else 0o444))
    os.chmod(root, 0o555)  # noqa: S103 - read and search for the sandbox's uid, write for nobody
    return total


def _remove(path: str) -> None:
    for dirpath, dirnames, _ in os.walk(path):
        for name in dirnames:
            full = os.path.join(dirpath, name)
            if not os.path.islink(full):
                os.chmod(full, 0o755)  # noqa: S103 - writable again only to be removed
    os.chmod(path, 0o755)  # noqa: S103 - writable again only to be removed
    shutil.rmtree(path, ignore_errors=True)


def _evict(policy: PackagePolicy, *, keep: str) -> None:
    """Remove the least recently used layers until the cache fits ``max_cache_bytes``."""
    layers = []
    for name in os.listdir(policy.cache_dir):
        path = os.path.join(policy.cache_dir, name)
        if name.startswith(PREFIX) and os.path.isdir(path):
            size = sum(os.lstat(os.path.join(d, f)).st_size for d, _, files in os.walk(path) for f in files)
            layers.append((os.stat(path).st_mtime, path, size))
    total = sum(size for _, _, size in layers)
    for _, path, size in sorted(layers):
        if total <= policy.max_cache_bytes:
            break
        if path != keep:
            _remove(path)
            total -= size

"""``sandbox.additional_packages``: a real Debian package the base sandbox lacks (``tree``) is
fetched once into a read-only layer, bound into a real sandbox, and runs there; what the operator
or apt refuses is a :class:`PackageError` naming the package."""

from __future__ import annotations

import functools
import os
import re
import shutil
import socket
import subprocess
import tempfile

import pytest

from engine.sandbox import SandboxConfig, create_sandbox, rootfs
from engine.sandbox.packages import (
    PACKAGES_MOUNT,
    PackageError,
    PackagePolicy,
    alternative_links,
    check_policy,
    ensure_layer,
    layer_env,
    resolve,
)
from engine.tests.tools.support import requires_bwrap

PACKAGE = "tree"
WITH_LIBRARY = "discount"  # its markdown program needs libmarkdown.so.2, from the libmarkdown2 dependency
WITH_ALTERNATIVE = "netcat-openbsd"  # ships /bin/nc.openbsd; nc is an update-alternatives link of its postinst


@functools.cache
def _apt_usable(download: bool = False) -> str:
    """Why this machine cannot resolve (or, with ``download``, fetch) packages, or "" when it can."""
    if not all(shutil.which(tool) for tool in ("apt-get", "apt-cache", "dpkg-deb", "dpkg-query")):
        return "apt-get, apt-cache, dpkg-deb or dpkg-query is missing"
    for package, command in ((PACKAGE, PACKAGE), (WITH_LIBRARY, "markdown"), (WITH_ALTERNATIVE, "nc")):
        shown = subprocess.run(["apt-cache", "show", "--no-all-versions", package], capture_output=True, text=True)
        if shown.returncode != 0:
            return f"apt has no package lists naming {package} (run apt-get update)"
        if shutil.which(command, path="/usr/bin:/bin:/usr/sbin:/sbin"):
            return f"the host already has {command}, so it proves nothing"
    return _mirror_unreachable() if download else ""


def _mirror_unreachable() -> str:
    """Offline machines skip the tests that download: "" when the mirror answers a TCP connect."""
    uris = subprocess.run(["apt-get", "download", "--print-uris", PACKAGE], capture_output=True, text=True, timeout=60)
    found = re.search(r"'(\w+)://([^/':]+)(?::(\d+))?/", uris.stdout)
    if found is None:
        return f"apt cannot say where {PACKAGE} is downloaded from"
    port = int(found.group(3) or (443 if found.group(1) == "https" else 80))
    try:
        socket.create_connection((found.group(2), port), timeout=5).close()
    except OSError as exc:
        return f"the Debian mirror {found.group(2)} is unreachable ({exc}): offline"
    return ""


requires_apt = pytest.mark.skipif(bool(_apt_usable()), reason=_apt_usable() or "apt usable")
requires_mirror = pytest.mark.skipif(bool(_apt_usable(download=True)), reason=_apt_usable(download=True) or "mirror reachable")


@pytest.fixture(scope="module")
def cache_dir():
    directory = tempfile.mkdtemp(prefix="agentclash-packages-")  # not under pytest's 0700 base: the sandbox uid binds it
    os.chmod(directory, 0o755)
    yield directory
    subprocess.run(["chmod", "-R", "u+w", directory], check=False)
    shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture(params=["skeleton", "per-file binds"])
def layout(request, monkeypatch) -> str:
    if request.param == "per-file binds":
        monkeypatch.setattr(rootfs, "skeleton_path", lambda directory, entries: None)
    return str(request.param)


@requires_mirror
@requires_bwrap
def test_an_installed_package_runs_in_a_real_sandbox_from_a_read_only_layer(cache_dir, layout):
    policy = PackagePolicy(cache_dir=cache_dir)
    layer = ensure_layer([PACKAGE], policy)
    assert os.path.isfile(os.path.join(layer, "usr", "bin", PACKAGE))
    assert ensure_layer([PACKAGE.upper(), PACKAGE], policy) == layer  # one layer per set, built once
    config = SandboxConfig(read_only_binds=((layer, PACKAGES_MOUNT),), env_vars=layer_env(layer))
    sandbox = create_sandbox(config)
    try:
        sandbox.write_file("/workspace/a/b.txt", b"x")
        result = sandbox.exec([PACKAGE, "/workspace"])
        assert result.exit_code == 0, result.stderr
        assert "b.txt" in result.stdout and "2 directories, 1 file" in result.stdout
        # the agent cannot change the layer the next sandbox gets
        write = sandbox.exec(["cp", "/workspace/a/b.txt", f"{PACKAGES_MOUNT}/usr/bin/{PACKAGE}"])
        assert write.exit_code != 0
        assert sandbox.exec(["touch", "/opt/new"]).exit_code != 0
    finally:
        sandbox.destroy()


@requires_bwrap
def test_a_sandbox_without_packages_does_not_have_the_package():
    sandbox = create_sandbox(SandboxConfig())
    try:
        result = sandbox.exec(["/usr/bin/env", PACKAGE, "--version"])
        assert result.exit_code != 0
    finally:
        sandbox.destroy()


@requires_apt
def test_an_unknown_package_is_an_error_naming_it(cache_dir):
    with pytest.raises(PackageError) as caught:
        resolve([PACKAGE, "agentclash-no-such-package"])
    assert caught.value.package == "agentclash-no-such-package"
    assert "agentclash-no-such-package" in caught.value.message


def test_the_operator_denylist_and_allowlist_refuse_by_name():
    with pytest.raises(PackageError) as denied:
        check_policy(["jq", "tree"], PackagePolicy(cache_dir="/nonexistent", deny=frozenset({"tree"})))
    assert denied.value.package == "tree" and "denylist" in denied.value.message
    with pytest.raises(PackageError) as outside:
        check_policy(["jq", "tree"], PackagePolicy(cache_dir="/nonexistent", allow=frozenset({"jq"})))
    assert outside.value.package == "tree" and "allowlist" in outside.value.message
    with pytest.raises(PackageError):
        check_policy(["tree"], PackagePolicy(cache_dir="/nonexistent", enabled=False))
    check_policy(["jq"], PackagePolicy(cache_dir="/nonexistent", allow=frozenset({"jq"})))


@requires_mirror
def test_a_layer_over_the_size_limit_is_refused_and_leaves_nothing_behind(tmp_path):
    cache = str(tmp_path / "cache")
    with pytest.raises(PackageError) as caught:
        ensure_layer([PACKAGE], PackagePolicy(cache_dir=cache, max_layer_bytes=1000))
    assert "more than this installation allows" in caught.value.message
    assert [n for n in os.listdir(cache) if not n.startswith(".lock")] == []


def test_the_layer_comes_after_the_system_in_path():
    env = layer_env()
    assert env["PATH"].startswith("/usr/local/sbin:")
    assert env["PATH"].index(PACKAGES_MOUNT) > env["PATH"].index("/usr/bin")


@requires_mirror
@requires_bwrap
def test_a_program_finds_the_shared_library_its_dependency_brought_and_its_alternatives_link(cache_dir):
    layer = ensure_layer([WITH_LIBRARY, WITH_ALTERNATIVE], PackagePolicy(cache_dir=cache_dir))
    assert os.readlink(os.path.join(layer, "bin", "nc")) == f"{PACKAGES_MOUNT}/bin/nc.openbsd"
    config = SandboxConfig(read_only_binds=((layer, PACKAGES_MOUNT),), env_vars=layer_env(layer), allow_shell=True)
    sandbox = create_sandbox(config)
    try:
        sandbox.write_file("/workspace/a.md", b"# Title\n\n*soft*\n")
        rendered = sandbox.exec(["markdown", "/workspace/a.md"])
        assert rendered.exit_code == 0, rendered.stderr
        assert "<h1>Title</h1>" in rendered.stdout and "<em>soft</em>" in rendered.stdout
        linked = sandbox.exec(["sh", "-c", 'ldd "$(command -v markdown)"'])
        assert f"libmarkdown.so.2 => {PACKAGES_MOUNT}/usr/lib/" in linked.stdout, linked.stdout
        netcat = sandbox.exec(["sh", "-c", "nc -h 2>&1; command -v nc; command -v netcat"])
        assert "OpenBSD netcat" in netcat.stdout, netcat.stdout
        assert f"{PACKAGES_MOUNT}/bin/nc\n{PACKAGES_MOUNT}/bin/netcat" in netcat.stdout
    finally:
        sandbox.destroy()


@requires_mirror
def test_the_cache_keeps_at_most_its_limit_dropping_the_least_recently_used_layer(tmp_path):
    cache = str(tmp_path / "cache")
    first = ensure_layer([PACKAGE], PackagePolicy(cache_dir=cache))
    second = ensure_layer([WITH_LIBRARY], PackagePolicy(cache_dir=cache, max_cache_bytes=1))
    assert os.path.isdir(second) and not os.path.exists(first)  # the layer just built stays, even over the limit
    third = ensure_layer([PACKAGE], PackagePolicy(cache_dir=cache))
    assert third == first and os.path.isdir(second)  # rebuilt on demand; no limit reached this time


def test_alternatives_are_read_from_literal_update_alternatives_calls_only():
    script = """#!/bin/sh
set -e
if [ "$1" = "configure" ]; then
    update-alternatives \\
        --install /usr/bin/editor editor /usr/bin/tiny 40 \\
        --slave /usr/share/man/man1/editor.1.gz editor.1.gz /usr/share/man/man1/tiny.1.gz
    update-alternatives --install "$BIN/pager" pager /usr/bin/tiny 10
    update-alternatives --install /usr/bin/up up /usr/bin/../../etc/passwd 10
fi
"""
    assert alternative_links(script) == [
        ("/usr/bin/editor", "/usr/bin/tiny"),
        ("/usr/share/man/man1/editor.1.gz", "/usr/share/man/man1/tiny.1.gz"),
    ]

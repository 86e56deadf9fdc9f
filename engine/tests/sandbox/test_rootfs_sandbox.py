"""A sandbox started from the root skeleton (rootfs.py) sees what one with a bind per file sees,
and a hostile agent can change neither the skeleton nor what the next sandbox gets."""

from __future__ import annotations

import hashlib
import os
import sys
import time

import pytest

from engine.sandbox import SandboxConfig, create_sandbox, rootfs
from engine.sandbox.bwrap import HOSTS_FILE, SANDBOX_LIB
from engine.tests.tools.support import requires_bwrap


@pytest.fixture(params=["skeleton", "per-file binds"])
def layout(request, monkeypatch) -> str:
    if request.param == "per-file binds":
        monkeypatch.setattr(rootfs, "skeleton_path", lambda directory, entries: None)
    return str(request.param)


def mount_points(sandbox) -> set[str]:
    result = sandbox.exec(["cat", "/proc/self/mountinfo"])
    assert result.exit_code == 0, result.stderr
    return {line.split()[4] for line in result.stdout.splitlines()}


def tree_digest(path: str) -> str:
    h = hashlib.sha256()
    for dirpath, dirnames, filenames in sorted(os.walk(path)):
        dirnames.sort()
        for name in sorted(filenames):
            full = os.path.join(dirpath, name)
            h.update(full.encode())
            if os.path.islink(full):
                h.update(os.readlink(full).encode())
            else:
                with open(full, "rb") as fh:
                    h.update(fh.read())
    return h.hexdigest()


@requires_bwrap
def test_the_sandbox_sees_the_same_system_files_either_way(layout):
    sandbox = create_sandbox(SandboxConfig(allow_shell=True))
    try:
        mounts = mount_points(sandbox)
        if layout == "skeleton":
            assert "/etc/ssl" not in mounts and "/etc/ld.so.cache" not in mounts
        else:
            assert "/etc/ssl" in mounts
        assert sandbox.exec(["cat", "/etc/hosts"]).stdout == HOSTS_FILE
        assert sandbox.exec(["id", "-un"]).stdout.strip() == "sandbox"
        bundle = "/etc/ssl/certs/ca-certificates.crt"
        if os.path.exists(bundle):
            with open(bundle) as fh:
                assert sandbox.exec(["cat", bundle]).stdout == fh.read()
        if os.path.exists("/etc/localtime"):
            assert sandbox.exec(["date", "+%Z"]).stdout.strip() == time.strftime("%Z")
        assert sandbox.exec(["test", "-r", f"{SANDBOX_LIB}/agentclash_toolhost.py"]).exit_code == 0
        assert not sandbox.exec(["ls", "/etc/ssl/private"]).stdout.strip()  # never copied, never listable
        assert sandbox.exec(["python3", "-c", "import ssl; ssl.create_default_context()"]).exit_code == 0
    finally:
        sandbox.destroy()


@requires_bwrap
@pytest.mark.parametrize(
    "command",
    [
        ["touch", "/etc/agentclash-evil"],
        ["sh", "-c", "echo evil >> /etc/hosts"],
        ["sh", "-c", "echo evil > /etc/ssl/certs/ca-certificates.crt"],
        ["sh", "-c", f"echo evil > {SANDBOX_LIB}/agentclash_toolhost.py"],
        ["chmod", "777", "/etc"],
        ["mkdir", "/evil"],
        ["ln", "-s", "/workspace", "/etc/evil-link"],
    ],
)
def test_a_hostile_agent_cannot_change_the_skeleton(command, native_launcher_dir):
    sandbox = create_sandbox(SandboxConfig(allow_shell=True))
    try:
        sandbox.exec(["true"])  # started: the skeleton it was started from exists now
        home = (rootfs.neutral_directory(native_launcher_dir) or native_launcher_dir) if native_launcher_dir else ""
        skeletons = [os.path.join(home, n) for n in (os.listdir(home) if home else []) if n.startswith(rootfs.PREFIX)]
        assert skeletons or not native_launcher_dir
        before = {p: tree_digest(p) for p in skeletons}
        assert sandbox.exec(command).exit_code != 0
        assert {p: tree_digest(p) for p in skeletons} == before
    finally:
        sandbox.destroy()
    following = create_sandbox(SandboxConfig(allow_shell=True))
    try:
        assert following.exec(["cat", "/etc/hosts"]).stdout == HOSTS_FILE
        assert following.exec(["ls", "/etc/agentclash-evil", "/evil", "/etc/evil-link"]).exit_code != 0
    finally:
        following.destroy()


def _host_paths(launcher_dir: str) -> list[str]:
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(rootfs.__file__))))
    home = os.path.expanduser("~")
    paths = [repo, sys.prefix, os.path.realpath(sys.prefix), "/work/", launcher_dir]
    return [p for p in paths if p and p != "/"] + ([home + "/", f" {home} "] if home not in ("", "/") else [])


@requires_bwrap
@pytest.mark.parametrize("network", [False, True], ids=["offline", "with egress proxy"])
def test_mountinfo_in_a_sandbox_says_nothing_about_the_host_layout(native_launcher_dir, network):
    assert native_launcher_dir, "the native launcher is built for the sandbox tests"
    config = SandboxConfig(allow_shell=True, allow_network=network)
    sandbox = create_sandbox(config)
    try:
        mountinfo = sandbox.exec(["cat", "/proc/self/mountinfo"])
        assert mountinfo.exit_code == 0, mountinfo.stderr
        assert not network or "/run/agentclash-egress" in mountinfo.stdout  # the proxy's socket is bound
    finally:
        sandbox.destroy()
    root = next(line.split() for line in mountinfo.stdout.splitlines() if line.split()[4] == "/")
    assert root[3].startswith("/") and os.path.basename(root[3]).startswith(rootfs.PREFIX), root  # from the skeleton
    for path in [*_host_paths(native_launcher_dir), sandbox.dir]:  # sandbox.dir: under SANDBOX_ROOT
        assert path not in mountinfo.stdout, f"{path!r} shows in the sandbox's mountinfo:\n{mountinfo.stdout}"

"""A sandbox started from the root skeleton (rootfs.py) sees what one with a bind per file sees,
and a hostile agent can change neither the skeleton nor what the next sandbox gets."""

from __future__ import annotations

import hashlib
import os
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
        names = os.listdir(native_launcher_dir) if native_launcher_dir else []
        skeletons = [os.path.join(native_launcher_dir, n) for n in names if n.startswith(rootfs.PREFIX)]
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

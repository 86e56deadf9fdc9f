"""A starting worker removes what dead workers left: workspace, its tmpfs, the sandbox's cgroup."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
import uuid

import pytest

from engine.sandbox import SandboxConfig, create_sandbox, mounts, reap_stale_sandboxes, stale
from engine.tests.tools.support import requires_bwrap


@pytest.fixture
def base():
    path = f"/tmp/agentclash-stale-test-{uuid.uuid4().hex[:8]}"
    os.makedirs(path)
    yield path
    for point in mounts.mounts_below(path):
        mounts.unmount(point)
    shutil.rmtree(path, ignore_errors=True)


def _dead_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


@requires_bwrap
def test_sandboxes_of_dead_workers_are_removed_and_live_ones_kept(base):
    live = create_sandbox(SandboxConfig(), base_dir=base)
    dead = create_sandbox(SandboxConfig(allow_shell=True), base_dir=base)
    try:
        dead.write_file("notes.txt", b"left behind")
        dead.exec(["true"])  # a launcher, and a cgroup where the worker may create one
        cgroups = list(dead.cgroup.paths) if dead.cgroup is not None else []
        dead._launcher.close()  # what --die-with-parent does when the worker dies
        record = stale.owner_record() | {"pid": _dead_pid()}
        with open(os.path.join(dead.dir, stale.OWNER_FILE), "w") as fh:
            json.dump(record, fh)
        assert reap_stale_sandboxes(base) == 1
        assert not os.path.exists(dead.dir) and mounts.mounts_below(dead.dir) == []
        assert all(not os.path.exists(p) for p in cgroups)
        assert os.path.exists(live.root) and live.exec(["true"]).exit_code == 0
    finally:
        dead.destroyed = True  # its files are gone already
        live.destroy()


def test_directories_without_an_owner_are_removed_only_when_old(base):
    old, fresh = os.path.join(base, "sbx-old"), os.path.join(base, "sbx-fresh")
    for path in (old, fresh):
        os.makedirs(os.path.join(path, "workspace"))
    hours_ago = time.time() - 2 * 3600
    os.utime(old, (hours_ago, hours_ago))
    assert reap_stale_sandboxes(base) == 1
    assert not os.path.exists(old) and os.path.exists(fresh)


def test_another_hosts_sandboxes_are_not_ours_to_judge(base):
    path = os.path.join(base, "sbx-elsewhere")
    os.makedirs(path)
    with open(os.path.join(path, stale.OWNER_FILE), "w") as fh:
        json.dump(stale.owner_record() | {"host": "another-machine", "pid": _dead_pid()}, fh)
    assert reap_stale_sandboxes(base) == 0 and os.path.exists(path)


def test_a_missing_root_is_nothing_to_reap():
    assert reap_stale_sandboxes("/nonexistent/agentclash-sandboxes") == 0


@pytest.mark.skipif(os.geteuid() != 0, reason="mounting a tmpfs needs a root worker")
def test_a_sandbox_directory_is_its_own_tmpfs_and_nothing_is_left_after_destroy(base):
    sandbox = create_sandbox(SandboxConfig(max_workspace_bytes=1024 * 1024), base_dir=base)
    try:
        assert mounts.mounts_below(sandbox.dir) == [sandbox.root, sandbox.dir]  # the workspace's tmpfs inside the directory's
        assert os.statvfs(sandbox.dir).f_blocks * os.statvfs(sandbox.dir).f_frsize >= 1024 * 1024  # holds the workspace's cap
        assert os.stat(sandbox.dir).st_mode & 0o777 == 0o711 and os.stat(sandbox.dir).st_uid == 0
        with open(os.path.join(sandbox.dir, stale.OWNER_FILE)) as fh:
            assert json.load(fh)["pid"] == os.getpid()
    finally:
        sandbox.destroy()
    assert not os.path.exists(sandbox.dir) and mounts.mounts_below(base) == []


@pytest.mark.skipif(os.geteuid() != 0, reason="umount2 answers EPERM, not EINVAL, to a non-root worker")
def test_a_mount_a_sibling_reaper_removed_first_is_no_warning(base, monkeypatch, caplog):
    # Pool processes reap a dead sibling's sandboxes at the same moment (worker_process_init): one
    # lists the mounts, the other unmounts them, and the first finds them gone.
    path = os.path.join(base, "sbx-raced")
    os.makedirs(os.path.join(path, "workspace"))
    monkeypatch.setattr(mounts, "mounts_below", lambda _: [os.path.join(path, "workspace"), path])  # listed, never mounted
    with caplog.at_level("DEBUG", logger="engine.sandbox.mounts"):
        stale.remove_sandbox_dir(path, racing=True)
    assert not os.path.exists(path)
    assert [r.levelname for r in caplog.records] == ["DEBUG", "DEBUG"]
    caplog.clear()
    mounts.unmount(base)  # the sandbox's own destroy still says so: its mount should have been there
    assert [r.levelname for r in caplog.records] == ["WARNING"] and "Invalid argument" in caplog.records[0].getMessage()

"""The sandbox's root skeleton (engine/sandbox/rootfs.py), built from a fake host tree."""

from __future__ import annotations

import os
import stat
import time

import pytest

from engine.sandbox import rootfs
from engine.sandbox.rootfs import Entry


@pytest.fixture
def launcher_dir(tmp_path):
    directory = tmp_path / "launcher"
    directory.mkdir(mode=0o755)
    os.chmod(directory, 0o755)
    return str(directory)


@pytest.fixture
def host(tmp_path):
    """A fake /etc-like tree: a public file, a secret file, a secret directory, a set-uid file and a symlink."""
    top = tmp_path / "host" / "ssl"
    (top / "certs").mkdir(parents=True)
    (top / "certs" / "ca.pem").write_text("PUBLIC CERT")
    os.chmod(top / "certs" / "ca.pem", 0o644)
    (top / "certs" / "link.pem").symlink_to("ca.pem")
    (top / "private").mkdir(mode=0o700)
    os.chmod(top / "private", 0o700)
    (top / "private" / "key.pem").write_text("SECRET KEY")
    (top / "shadow").write_text("SECRET")
    os.chmod(top / "shadow", 0o600)
    (top / "tool").write_text("#!/bin/sh\n")
    os.chmod(top / "tool", 0o4777)
    return top


@pytest.fixture(autouse=True)
def fresh_cache(monkeypatch, tmp_path):
    monkeypatch.setattr(rootfs, "_cache", rootfs._Cache())
    shm = tmp_path / "shm"  # the host's /dev/shm stands in here: nothing left behind
    shm.mkdir(mode=0o755)
    os.chmod(shm, 0o1777)
    monkeypatch.setattr(rootfs, "NEUTRAL_BASE", str(shm))


def entries_for(host) -> tuple[Entry, ...]:
    return (
        Entry("/usr", "dir"),
        Entry("/bin", "symlink", "usr/bin"),
        Entry("/etc/passwd", "file"),
        Entry("/etc/hosts", "data", b"127.0.0.1 localhost\n"),
        Entry("/etc/ssl", "copy", str(host)),
    )


def test_skeleton_holds_mount_points_symlinks_data_and_public_copies(launcher_dir, host):
    path = rootfs.skeleton_path(launcher_dir, entries_for(host))
    assert path is not None and os.path.basename(path).startswith(rootfs.PREFIX)
    assert os.path.isdir(os.path.join(path, "usr")) and os.listdir(os.path.join(path, "usr")) == []
    assert os.readlink(os.path.join(path, "bin")) == "usr/bin"
    assert os.path.getsize(os.path.join(path, "etc/passwd")) == 0
    with open(os.path.join(path, "etc/hosts"), "rb") as fh:
        assert fh.read() == b"127.0.0.1 localhost\n"
    with open(os.path.join(path, "etc/ssl/certs/ca.pem")) as fh:
        assert fh.read() == "PUBLIC CERT"
    assert os.readlink(os.path.join(path, "etc/ssl/certs/link.pem")) == "ca.pem"


def test_skeleton_copies_nothing_others_could_not_read_and_drops_set_id_and_write_bits(launcher_dir, host):
    path = rootfs.skeleton_path(launcher_dir, entries_for(host))
    assert path is not None
    assert not os.path.lexists(os.path.join(path, "etc/ssl/private"))
    assert not os.path.lexists(os.path.join(path, "etc/ssl/shadow"))
    mode = stat.S_IMODE(os.stat(os.path.join(path, "etc/ssl/tool")).st_mode)
    assert mode == 0o755
    for dirpath, dirnames, filenames in os.walk(path):
        for name in dirnames + filenames:
            st = os.lstat(os.path.join(dirpath, name))
            if not stat.S_ISLNK(st.st_mode):
                assert not st.st_mode & (stat.S_IWGRP | stat.S_IWOTH | stat.S_ISUID | stat.S_ISGID), name
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o755


def test_skeleton_is_reused_while_nothing_changes_and_rebuilt_beside_when_the_host_changes(launcher_dir, host, monkeypatch):
    first = rootfs.skeleton_path(launcher_dir, entries_for(host))
    assert rootfs.skeleton_path(launcher_dir, entries_for(host)) == first  # cached
    monkeypatch.setattr(rootfs, "CHECK_INTERVAL", 0.0)
    assert rootfs.skeleton_path(launcher_dir, entries_for(host)) == first  # walked again: same digest
    (host / "certs" / "ca.pem").write_text("ROTATED CERT, LONGER")
    second = rootfs.skeleton_path(launcher_dir, entries_for(host))
    assert second is not None and second != first
    with open(os.path.join(second, "etc/ssl/certs/ca.pem")) as fh:
        assert fh.read() == "ROTATED CERT, LONGER"
    # the old one stays for sandboxes still running from it (it was used a moment ago)
    with open(os.path.join(first, "etc/ssl/certs/ca.pem")) as fh:
        assert fh.read() == "PUBLIC CERT"


def test_an_unused_old_skeleton_is_pruned_when_a_new_one_is_built(launcher_dir, host, monkeypatch):
    first = rootfs.skeleton_path(launcher_dir, entries_for(host))
    assert first is not None
    stale = time.time() - rootfs.KEEP_UNUSED - 60
    os.utime(first, (stale, stale))
    monkeypatch.setattr(rootfs, "CHECK_INTERVAL", 0.0)
    (host / "certs" / "new.pem").write_text("NEW")
    second = rootfs.skeleton_path(launcher_dir, entries_for(host))
    assert second is not None and os.path.isdir(second)
    assert not os.path.exists(first)


def test_a_concurrent_builder_of_the_same_digest_loses_harmlessly(launcher_dir, host):
    entries = entries_for(host)
    name = rootfs.PREFIX + rootfs._digest(entries)
    one = rootfs._build(launcher_dir, entries, name)
    two = rootfs._build(launcher_dir, entries, name)
    assert one == two and os.path.isdir(one)
    assert [n for n in os.listdir(launcher_dir) if n.startswith(".build-")] == []


def test_no_skeleton_without_a_trusted_directory(tmp_path, host):
    assert rootfs.skeleton_path("", entries_for(host)) is None
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o777)
    assert rootfs.skeleton_path(str(shared), entries_for(host)) is None
    assert os.listdir(shared) == []


def test_open_skeleton_checks_the_fd_it_returns(launcher_dir, host):
    path = rootfs.skeleton_path(launcher_dir, entries_for(host))
    assert path is not None
    fd = rootfs.open_skeleton(path)
    assert fd is not None
    os.close(fd)
    os.chmod(path, 0o777)  # made writable by others after it was built: refused
    assert rootfs.open_skeleton(path) is None
    os.chmod(path, 0o755)
    link = os.path.join(launcher_dir, "link")
    os.symlink(path, link)  # never followed
    assert rootfs.open_skeleton(link) is None


def test_a_build_that_fails_falls_back_and_says_so(launcher_dir, host, caplog, monkeypatch):
    bad = (*entries_for(host), Entry("/x", "nonsense"))
    with pytest.raises(ValueError, match="unknown skeleton entry kind"):
        rootfs.skeleton_path(launcher_dir, bad)
    assert [n for n in os.listdir(launcher_dir) if n.startswith(".build-")] == []

    def full_disk(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(rootfs, "_copy", full_disk)
    assert rootfs.skeleton_path(launcher_dir, entries_for(host)) is None
    assert "binding each file instead" in caplog.text
    assert [n for n in os.listdir(launcher_dir) if n.startswith((".build-", rootfs.PREFIX))] == []


def test_the_launcher_is_copied_only_from_a_trusted_file(launcher_dir, host, tmp_path, caplog, monkeypatch):
    monkeypatch.setattr(rootfs, "CHECK_INTERVAL", 0.0)
    good_dir = tmp_path / "bin"
    good_dir.mkdir()
    os.chmod(good_dir, 0o755)
    binary = good_dir / "launcher"
    binary.write_bytes(b"\x7fELF trusted")
    os.chmod(binary, 0o755)
    path = rootfs.skeleton_path(launcher_dir, (*entries_for(host), Entry("/.agentclash/bin/launcher", "exec", str(binary))))
    assert path is not None
    copied = os.path.join(path, ".agentclash/bin/launcher")
    assert open(copied, "rb").read() == b"\x7fELF trusted" and stat.S_IMODE(os.stat(copied).st_mode) == 0o755

    os.chmod(binary, 0o777)  # anyone could have written its bytes: never copied, no skeleton
    assert rootfs.skeleton_path(launcher_dir, (*entries_for(host), Entry("/.agentclash/bin/launcher", "exec", str(binary)))) is None
    assert "not trusted" in caplog.text
    os.chmod(binary, 0o755)
    os.chmod(good_dir, 0o777)  # its directory is writable by others, and the file was replaced: same
    binary.write_bytes(b"\x7fELF planted, longer")
    assert rootfs.skeleton_path(launcher_dir, (*entries_for(host), Entry("/.agentclash/bin/launcher", "exec", str(binary)))) is None
    link = tmp_path / "link"
    link.symlink_to(binary)
    os.chmod(good_dir, 0o755)
    assert rootfs.skeleton_path(launcher_dir, (*entries_for(host), Entry("/.agentclash/bin/launcher", "exec", str(link)))) is None


def test_skeletons_live_in_a_neutral_directory_named_by_a_digest(launcher_dir, host):
    path = rootfs.skeleton_path(launcher_dir, entries_for(host))
    assert path is not None and os.path.dirname(os.path.dirname(path)) == rootfs.NEUTRAL_BASE
    home = os.path.basename(os.path.dirname(path))
    assert len(home) == 16 and all(c in "0123456789abcdef" for c in home)  # says nothing of the host
    assert os.listdir(launcher_dir) == []
    assert rootfs.neutral_directory(launcher_dir) == os.path.dirname(path)


def test_the_launcher_directory_is_used_when_the_neutral_one_is_not_ours_or_missing(launcher_dir, host, monkeypatch):
    taken = os.path.join(rootfs.NEUTRAL_BASE, os.path.basename(rootfs.neutral_directory(launcher_dir)))
    os.chmod(taken, 0o777)  # as if another user had made it first: not trusted
    assert rootfs.neutral_directory(launcher_dir) is None
    path = rootfs.skeleton_path(launcher_dir, entries_for(host))
    assert path is not None and os.path.dirname(path) == launcher_dir
    monkeypatch.setattr(rootfs, "NEUTRAL_BASE", "/nonexistent-agentclash")
    assert rootfs.neutral_directory(launcher_dir) is None


def test_a_stale_egress_directory_a_crashed_worker_left_is_pruned_with_old_skeletons(launcher_dir, host, monkeypatch):
    first = rootfs.skeleton_path(launcher_dir, entries_for(host))
    assert first is not None
    home = os.path.dirname(first)
    stale_dir, live_dir = os.path.join(home, rootfs.EGRESS_PREFIX + "a" * 32), os.path.join(home, rootfs.EGRESS_PREFIX + "b" * 32)
    os.mkdir(stale_dir)
    os.mkdir(live_dir)
    old = time.time() - rootfs.KEEP_UNUSED - 60
    os.utime(stale_dir, (old, old))
    monkeypatch.setattr(rootfs, "CHECK_INTERVAL", 0.0)
    (host / "certs" / "new.pem").write_text("NEW")
    assert rootfs.skeleton_path(launcher_dir, entries_for(host)) != first
    assert not os.path.exists(stale_dir) and os.path.isdir(live_dir)

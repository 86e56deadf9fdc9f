"""Path resolution below the workspace root when the agent swaps a link while it is read."""

from __future__ import annotations

import errno
import os

import pytest

from engine.sandbox import WorkspacePathError, fs


@pytest.fixture
def root(tmp_path):
    fd = fs.open_root(str(tmp_path))
    yield tmp_path, fd
    os.close(fd)


def test_a_link_replaced_by_a_file_between_stat_and_readlink_is_looked_at_again(root, monkeypatch):
    """The CI failure: ``readlink`` raised EINVAL (no longer a link) and the data tool failed
    "unexpectedly"; the component is now stat'ed again and resolves to the file it became."""
    path, fd = root
    (path / "real.db").write_bytes(b"x")
    os.symlink("real.db", path / "db")
    real_readlink = os.readlink

    def swapped(name, *, dir_fd=None):
        os.unlink(path / "db")
        (path / "db").write_bytes(b"now a file")
        monkeypatch.setattr(os, "readlink", real_readlink)
        return real_readlink(name, dir_fd=dir_fd)  # EINVAL: what the racer left is a file

    monkeypatch.setattr(os, "readlink", swapped)
    assert fs.resolve(fd, "db") == ["db"]


@pytest.mark.parametrize(
    "err, raised",
    [
        (errno.EINVAL, WorkspacePathError),  # a racer that never settles: a path error, not a loop
        (errno.EACCES, PermissionError),  # other readlink errors still raise
    ],
)
def test_a_link_that_cannot_be_read_ends_the_resolution(root, monkeypatch, err, raised):
    path, fd = root
    os.symlink("elsewhere", path / "db")

    def failing(name, *, dir_fd=None):
        raise OSError(err, os.strerror(err))

    monkeypatch.setattr(os, "readlink", failing)
    with pytest.raises(raised):
        fs.resolve(fd, "db")

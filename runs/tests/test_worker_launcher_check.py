"""A starting worker logs an error naming the fix when no sandbox can start (runs.tasks, worker_ready)."""

from __future__ import annotations

import logging
import os

from engine.sandbox import native
from runs import tasks


def test_a_worker_without_a_trusted_launcher_logs_the_fix_and_keeps_running(tmp_path, settings, caplog):
    directory = tmp_path / "launcher"
    directory.mkdir()
    os.chmod(directory, 0o777)  # others may write it: never trusted, nothing is built
    settings.SANDBOX_LAUNCHER_DIR = str(directory)
    with caplog.at_level(logging.ERROR, logger="runs.tasks"):
        tasks.sandbox_launcher_check()  # does not raise
    [record] = [r for r in caplog.records if r.name == "runs.tasks"]
    assert record.levelno == logging.ERROR
    assert "native sandbox launcher unavailable" in record.getMessage()
    assert "make setup" in record.getMessage() and str(directory) in record.getMessage()


def test_a_worker_with_the_launcher_logs_nothing(settings, caplog, monkeypatch):
    monkeypatch.setattr(native, "require_binary", lambda directory: os.path.join(directory, native.binary_name()))
    with caplog.at_level(logging.ERROR, logger="runs.tasks"):
        tasks.sandbox_launcher_check()
    assert not [r for r in caplog.records if r.name == "runs.tasks"]

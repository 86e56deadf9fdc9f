"""The engine's tests start sandboxes with the native launcher (``engine/sandbox/launcher.c``),
the only sandbox PID 1, built once per session into a temporary directory; without a C compiler
there is none, and ``engine/tests/sandbox`` skips (fails under REQUIRE_SERVICES=1)."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator

import pytest

from engine.sandbox import native, rootfs


@pytest.fixture(scope="session")
def native_launcher_dir() -> Iterator[str]:
    if native.compiler() is None:
        yield ""
        return
    # Not under pytest's 0700 base: bwrap resolves the bind source as the sandbox's uid.
    directory = tempfile.mkdtemp(prefix="agentclash-launcher-")
    os.chmod(directory, 0o755)
    native.build(directory)
    yield directory
    shutil.rmtree(directory, ignore_errors=True)
    neutral = rootfs.neutral_directory(directory)  # where its root skeletons went (rootfs.py)
    if neutral:
        shutil.rmtree(neutral, ignore_errors=True)


@pytest.fixture(autouse=True)
def _native_launcher(native_launcher_dir: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(native, "DEFAULT_DIR", native_launcher_dir)

"""The native launcher is every sandbox's PID 1: a test that needs a sandbox needs it built."""

from __future__ import annotations

import os

import pytest

from engine.sandbox import native

REQUIRED = os.environ.get("REQUIRE_SERVICES") == "1"
# Tests that build or run the binary: they run (and fail) without a compiler under REQUIRE_SERVICES=1.
requires_cc = pytest.mark.skipif(native.compiler() is None and not REQUIRED, reason="no C compiler: the native launcher cannot be built")


def require_native_launcher(native_launcher_dir: str) -> None:
    """Without a C compiler there is no sandbox at all: skip, unless REQUIRE_SERVICES=1 (CI), where
    that is a failure."""
    if native_launcher_dir:
        return
    if REQUIRED:
        pytest.fail("the native sandbox launcher is required (REQUIRE_SERVICES=1) but no C compiler can build it")
    pytest.skip("no C compiler: the native launcher (every sandbox's PID 1) cannot be built")

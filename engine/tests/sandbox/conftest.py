import pytest

from engine.tests.sandbox.launcher_support import require_native_launcher
from engine.tests.tools.support import harness_factory, http_server  # noqa: F401


@pytest.fixture(autouse=True)
def _native_launcher_required(native_launcher_dir: str) -> None:
    """Every sandbox test runs against the production PID 1, the native launcher (launcher.c), from
    the session's launcher directory, so from the root skeleton (``rootfs.py``);
    ``test_rootfs_sandbox.py`` covers the sandbox without a skeleton (each file bound). No C
    compiler: skipped, or failed under REQUIRE_SERVICES=1."""
    require_native_launcher(native_launcher_dir)

import pytest

from engine.sandbox import native
from engine.tests.tools.support import harness_factory, http_server  # noqa: F401


@pytest.fixture(autouse=True, params=["native", "python"])
def launcher_kind(request: pytest.FixtureRequest, native_launcher_dir: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """Every sandbox test runs with both PID 1s: the native launcher (launcher.c) and launcher.py.

    Both keep the launcher directory, so both start from the root skeleton (``rootfs.py``); the
    Python one because no native binary is found there. ``test_rootfs_sandbox.py`` covers the
    sandbox without a skeleton (each file bound)."""
    if request.param == "native" and not native_launcher_dir:
        pytest.skip("no C compiler: the native launcher cannot be built")
    if request.param == "python":
        monkeypatch.setattr(native, "launcher_binary", lambda directory, *, build_missing=True: None)
    return str(request.param)

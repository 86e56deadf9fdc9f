import pytest

from engine.sandbox import native
from engine.tests.tools.support import harness_factory, http_server  # noqa: F401


@pytest.fixture(autouse=True, params=["native", "python"])
def launcher_kind(request: pytest.FixtureRequest, native_launcher_dir: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """Every sandbox test runs with both PID 1s: the native launcher (launcher.c) and launcher.py."""
    if request.param == "native" and not native_launcher_dir:
        pytest.skip("no C compiler: the native launcher cannot be built")
    monkeypatch.setattr(native, "DEFAULT_DIR", native_launcher_dir if request.param == "native" else "")
    return str(request.param)

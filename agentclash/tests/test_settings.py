"""Settings: production refuses to start without its secrets; every entry point defaults to local."""

from __future__ import annotations

import base64
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from django.conf import settings

ROOT = Path(__file__).resolve().parents[2]
CONTROLLED = (
    "DJANGO_SETTINGS_MODULE",
    "DJANGO_SECRET_KEY",
    "SECRETS_ENCRYPTION_KEY",
    "DATABASE_URL",
    "SANDBOX_ALLOW_UNISOLATED",
    "DEBUG",
)
PRODUCTION = {
    "DJANGO_SETTINGS_MODULE": "agentclash.settings.production",
    "DJANGO_SECRET_KEY": "a-production-secret-key-that-is-long-enough-0123456789",
    "SECRETS_ENCRYPTION_KEY": "key1:" + base64.urlsafe_b64encode(b"k" * 32).decode(),
    "DATABASE_URL": "postgres://agentclash@127.0.0.1:5432/agentclash",
}


def _python(code: str, tmp_path: Path, **variables: str | None) -> subprocess.CompletedProcess[str]:
    env = {key: value for key, value in os.environ.items() if key not in CONTROLLED}
    env["AGENTCLASH_VAR_DIR"] = str(tmp_path / "var")
    env.update({key: value for key, value in variables.items() if value is not None})
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)


def test_production_settings_start_with_every_required_variable(tmp_path):
    result = _python("import agentclash.settings.production as s; print(s.DEBUG, s.SECRET_KEY[:12])", tmp_path, **PRODUCTION)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["False", "a-production"]


@pytest.mark.parametrize(
    ("missing", "message"),
    [
        ("DJANGO_SECRET_KEY", "DJANGO_SECRET_KEY must be set in production."),
        ("SECRETS_ENCRYPTION_KEY", "SECRETS_ENCRYPTION_KEY must be set in production"),
        ("DATABASE_URL", "DATABASE_URL must be set in production."),
    ],
)
def test_production_settings_refuse_to_start_without_a_required_variable(tmp_path, missing, message):
    result = _python("import agentclash.settings.production", tmp_path, **{**PRODUCTION, missing: None})
    assert result.returncode == 1
    assert f"django.core.exceptions.ImproperlyConfigured: {message}" in result.stderr


def test_production_settings_refuse_to_start_with_an_empty_required_variable(tmp_path):
    result = _python("import agentclash.settings.production", tmp_path, **{**PRODUCTION, "DJANGO_SECRET_KEY": ""})
    assert result.returncode == 1
    assert "DJANGO_SECRET_KEY must be set in production." in result.stderr


@pytest.mark.parametrize("value", ["true", "1", "yes"])
def test_production_settings_refuse_unisolated_sandboxes(tmp_path, value):
    result = _python("import agentclash.settings.production", tmp_path, **PRODUCTION, SANDBOX_ALLOW_UNISOLATED=value)
    assert result.returncode == 1
    assert "SANDBOX_ALLOW_UNISOLATED is for development only." in result.stderr


@pytest.mark.parametrize(
    "entry_point",
    [
        "import agentclash.wsgi",
        "import agentclash.asgi",
        "import agentclash.celery, django; django.setup()",
        "import manage, sys; sys.argv = ['manage.py', 'check']; manage.main()",
    ],
)
def test_every_entry_point_defaults_to_local_settings(tmp_path, entry_point):
    code = f"{entry_point}\nfrom django.conf import settings\nprint('settings:', settings.SETTINGS_MODULE)"
    result = _python(code, tmp_path)
    assert result.returncode == 0, result.stderr
    assert "settings: agentclash.settings.local" in result.stdout


def test_settings_the_runs_worker_reads_are_declared_with_their_defaults():
    assert (settings.RUNS_EVENT_FLUSH_SECONDS, settings.RUNS_HEARTBEAT_SECONDS) == (0.5, 5.0)
    assert isinstance(settings.RUNS_RETRY_BACKOFF_SECONDS, float)
    assert not hasattr(settings, "SANDBOX_SUBPROCESS_NETWORK")


def _variables_read_by_settings() -> set[str]:
    source = "\n".join(path.read_text() for path in (ROOT / "agentclash" / "settings").glob("*.py"))
    return set(re.findall(r"\benv(?:\.\w+)?\(\s*\"([A-Z][A-Z0-9_]*)\"", source))


def test_the_readme_lists_every_variable_the_settings_read():
    table = set(re.findall(r"^\| `([A-Z][A-Z0-9_]*)` \|", (ROOT / "README.md").read_text(), re.MULTILINE))
    read = _variables_read_by_settings()
    assert {"DJANGO_SECRET_KEY", "RUNS_HEARTBEAT_SECONDS"} <= read
    assert read - table == set(), "add these to the README's configuration table"
    # `make run`'s own variables (PORT, HOST, CELERY_CONCURRENCY) are read by scripts/run_dev.sh, not the settings.
    run_dev = set(re.findall(r"\$\{([A-Z][A-Z0-9_]*)[:}-]", (ROOT / "scripts" / "run_dev.sh").read_text()))
    assert {"PORT", "HOST"} <= run_dev
    assert table - read - run_dev == set(), "the README lists variables neither the settings nor scripts/run_dev.sh read"


@pytest.mark.parametrize("module", ["agentclash.settings.local", "agentclash.settings.production"])
def test_the_python_sandbox_launcher_is_refused_in_every_environment(tmp_path, module):
    result = _python(f"import {module}", tmp_path, **{**PRODUCTION, "DJANGO_SETTINGS_MODULE": module, "SANDBOX_LAUNCHER": "python"})
    assert result.returncode == 1
    assert 'ImproperlyConfigured: SANDBOX_LAUNCHER must be "native"' in result.stderr


@pytest.mark.parametrize("value", ["auto", " AUTO ", "native"])
def test_the_auto_sandbox_launcher_means_the_native_one(tmp_path, value):
    result = _python("import agentclash.settings.local as s; print(s.SANDBOX_LAUNCHER)", tmp_path, SANDBOX_LAUNCHER=value)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["native"]


@pytest.mark.parametrize("value", ["", "  "])
def test_an_empty_sandbox_launcher_dir_is_refused(tmp_path, value):
    result = _python("import agentclash.settings.local", tmp_path, SANDBOX_LAUNCHER_DIR=value)
    assert result.returncode == 1
    assert "ImproperlyConfigured: SANDBOX_LAUNCHER_DIR must name the native launcher's directory" in result.stderr

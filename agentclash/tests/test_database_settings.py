"""PostgreSQL prepared statements for the worker's hot statements: on by default, off on request."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SHOW = "from django.conf import settings; print(settings.DATABASES['default'].get('OPTIONS', {}).get('prepare_threshold', 'unset'))"


def _settings(tmp_path: Path, **variables: str) -> subprocess.CompletedProcess[str]:
    env = {key: value for key, value in os.environ.items() if key not in ("DATABASE_URL", "DATABASE_PREPARE_THRESHOLD")}
    env.update(AGENTCLASH_VAR_DIR=str(tmp_path / "var"), DJANGO_SETTINGS_MODULE="agentclash.settings.local", **variables)
    code = "import django; django.setup(); " + SHOW
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)


PG = "postgres://postgres@127.0.0.1:5432/agentclash_unused"


@pytest.mark.parametrize(
    "variables, expected",
    [
        ({"DATABASE_URL": PG}, "5"),
        ({"DATABASE_URL": PG, "DATABASE_PREPARE_THRESHOLD": "0"}, "0"),
        ({"DATABASE_URL": PG, "DATABASE_PREPARE_THRESHOLD": "off"}, "unset"),
        ({"DATABASE_URL": PG + "?prepare_threshold=2"}, "2"),
        ({}, "unset"),  # SQLite: no such option
    ],
)
def test_prepared_statements_threshold(tmp_path, variables, expected):
    result = _settings(tmp_path, **variables)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == expected


def test_a_bad_threshold_is_refused_with_the_settings_name(tmp_path):
    result = _settings(tmp_path, DATABASE_URL=PG, DATABASE_PREPARE_THRESHOLD="-1")
    assert result.returncode != 0 and "DATABASE_PREPARE_THRESHOLD must be a whole number" in result.stderr

"""Pool processes reserve messages ahead only on the polling filesystem broker (docs/performance.md)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CODE = "import agentclash.settings.local as s; print(s.CELERY_WORKER_PREFETCH_MULTIPLIER)"


def _prefetch(tmp_path: Path, **variables: str) -> subprocess.CompletedProcess[str]:
    controlled = ("DJANGO_SETTINGS_MODULE", "CELERY_BROKER_URL", "CELERY_WORKER_PREFETCH_MULTIPLIER")
    env = {key: value for key, value in os.environ.items() if key not in controlled}
    env.update(AGENTCLASH_VAR_DIR=str(tmp_path / "var"), **variables)
    return subprocess.run([sys.executable, "-c", CODE], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize(
    "variables, expected",
    [
        ({}, "4"),  # the embedded default broker polls its folder
        ({"CELERY_BROKER_URL": "redis://127.0.0.1:6379/0"}, "1"),  # pushes: nothing to gain, fairer between workers
        ({"CELERY_WORKER_PREFETCH_MULTIPLIER": "2"}, "2"),
    ],
)
def test_the_prefetch_depends_on_the_broker(tmp_path, variables, expected):
    result = _prefetch(tmp_path, **variables)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == expected


def test_zero_which_celery_reads_as_unlimited_is_refused(tmp_path):
    result = _prefetch(tmp_path, CELERY_WORKER_PREFETCH_MULTIPLIER="0")
    assert result.returncode != 0 and "CELERY_WORKER_PREFETCH_MULTIPLIER must be 1 or more" in result.stderr

"""Pool-process memory: objects frozen before a fork, a memory ceiling per pool process (docs/performance.md)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _python(tmp_path: Path, code: str, **variables: str) -> subprocess.CompletedProcess[str]:
    controlled = ("DJANGO_SETTINGS_MODULE", "CELERY_WORKER_MAX_MEMORY_PER_CHILD")
    env = {key: value for key, value in os.environ.items() if key not in controlled}
    env.update(AGENTCLASH_VAR_DIR=str(tmp_path / "var"), **variables)
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)


FREEZE = """
import gc, weakref
from celery import signals
from agentclash.celery import app

class Cycle:
    pass

garbage = Cycle(); garbage.me = garbage; dead = weakref.ref(garbage); del garbage
assert gc.get_freeze_count() == 0
signals.worker_before_create_process.send(sender=None)  # what the prefork pool sends before each fork
print(gc.get_freeze_count() > 1000, dead() is None)
"""


def test_the_worker_freezes_its_objects_before_forking_a_pool_process_and_collects_garbage_first(tmp_path):
    result = _python(tmp_path, FREEZE)
    assert result.returncode == 0, result.stderr
    # frozen: the imported code and everything alive; the dead cycle collected first, not kept for ever
    assert result.stdout.split() == ["True", "True"]


MAX_MEMORY = "from agentclash.celery import app; print(app.conf.worker_max_memory_per_child)"


@pytest.mark.parametrize("variables, expected", [({}, str(512 * 1024)), ({"CELERY_WORKER_MAX_MEMORY_PER_CHILD": "0"}, "0")])
def test_a_pool_process_has_a_memory_ceiling_which_celery_reads(tmp_path, variables, expected):
    result = _python(tmp_path, MAX_MEMORY, **variables)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == expected


def test_a_negative_memory_ceiling_is_refused(tmp_path):
    result = _python(tmp_path, MAX_MEMORY, CELERY_WORKER_MAX_MEMORY_PER_CHILD="-1")
    assert result.returncode != 0 and "CELERY_WORKER_MAX_MEMORY_PER_CHILD must be 0 (never) or more" in result.stderr

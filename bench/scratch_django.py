"""Django for a bench script: the local settings on a scratch SQLite database and media directory
(removed when the process ends) unless the environment names others, quiet logs, no debug.

    ROOT = Path(__file__).resolve().parents[1]
    sys.path.insert(0, str(ROOT))
    from bench.scratch_django import django_setup
    django_setup()
"""

from __future__ import annotations

import os
import tempfile

_scratch: tempfile.TemporaryDirectory[str] | None = None


def django_setup() -> None:
    global _scratch
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "agentclash.settings.local")
    os.environ.setdefault("DEBUG", "false")
    os.environ.setdefault("LOG_LEVEL", "WARNING")
    if _scratch is None:
        _scratch = tempfile.TemporaryDirectory(prefix="agentclash-bench-")
    os.environ.setdefault("DATABASE_URL", f"sqlite:///{_scratch.name}/bench.sqlite3")
    os.environ.setdefault("MEDIA_ROOT", f"{_scratch.name}/media")

    import django

    django.setup()

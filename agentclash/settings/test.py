"""Test settings: embedded defaults unless DATABASE_URL / CELERY_BROKER_URL say otherwise."""

from __future__ import annotations

import base64

from agentclash.settings.base import *  # noqa: F403

DEBUG = False
SECRET_KEY = "test-secret-key-not-for-production"
SECRETS_ENCRYPTION_KEYS = [
    "test1:" + base64.urlsafe_b64encode(b"t" * 32).decode(),
]
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
    # Kept apart from a developer's own artifacts; worker subprocesses use the same folder.
    "artifacts": {
        "BACKEND": "django.core.files.storage.FileSystemStorage",
        "OPTIONS": {"location": str(VAR_DIR / "test-media" / "artifacts")},  # noqa: F405
    },
}
CELERY_TASK_ALWAYS_EAGER = False
# Cases run in the test process itself (drained tasks) would leave a spare sandbox and its starter
# thread behind in it: cold sandboxes unless a test asks (runs/tests/test_warm_sandboxes.py).
SANDBOX_WARM_POOL = env.int("SANDBOX_WARM_POOL", default=0)  # noqa: F405

if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":  # noqa: F405
    # A file (not :memory:) so a real Celery worker subprocess can share the test database;
    # the pid keeps parallel test sessions on one machine apart.
    import os as _os

    DATABASES["default"]["TEST"] = {"NAME": str(VAR_DIR / f"test-{_os.getpid()}.sqlite3")}  # noqa: F405

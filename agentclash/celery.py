"""The Celery app. Tasks are thin: ids in, a service call out (STYLE.md §13)."""

from __future__ import annotations

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "agentclash.settings.local")

app = Celery("agentclash")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


def _ensure_filesystem_broker_folders() -> None:
    from django.conf import settings

    options = getattr(settings, "CELERY_BROKER_TRANSPORT_OPTIONS", {}) or {}
    for key in ("data_folder_in", "data_folder_out", "processed_folder", "control_folder"):
        if key in options:
            os.makedirs(options[key], exist_ok=True)


try:
    _ensure_filesystem_broker_folders()
except Exception:  # noqa: BLE001, S110 - settings not configured yet (e.g. import for docs)
    pass

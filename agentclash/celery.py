"""The Celery app. Tasks are thin: ids in, a service call out (docs/style.md §19).

Like manage.py, WSGI and ASGI, the worker defaults to ``agentclash.settings.local``; production
sets ``DJANGO_SETTINGS_MODULE=agentclash.settings.production`` explicitly. The filesystem
broker's folders are created by the settings (agentclash/settings/base.py).
"""

from __future__ import annotations

import gc
import os

from celery import Celery, signals

from agentclash import broker

broker.install()  # atomic message files for the embedded filesystem broker
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "agentclash.settings.local")

app = Celery("agentclash")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@signals.worker_before_create_process.connect
def gc_freeze_before_fork(**_: object) -> None:
    """Keep the worker's imported code shared with its pool processes (docs/performance.md).

    Sent in the worker's main process just before it forks a pool process (prefork only). A
    pool process's first full garbage collection wrote to the header of every object it
    inherited, copying most of the parent's heap page by page: about 40 MB more private memory
    per pool process within seconds of starting. Objects frozen here are never examined by a
    collection again, in the parent or in the child; garbage is collected first so that none is
    kept for ever.
    """
    gc.collect()
    gc.freeze()

"""The Celery app. Tasks are thin: ids in, a service call out (STYLE.md §13).

Like manage.py, WSGI and ASGI, the worker defaults to ``agentclash.settings.local``; production
sets ``DJANGO_SETTINGS_MODULE=agentclash.settings.production`` explicitly. The filesystem
broker's folders are created by the settings (agentclash/settings/base.py).
"""

from __future__ import annotations

import os

from celery import Celery

from agentclash import broker

broker.install()  # atomic message files for the embedded filesystem broker
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "agentclash.settings.local")

app = Celery("agentclash")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()

"""The WSGI application (gunicorn ``agentclash.wsgi``).

Every entry point (manage.py, Celery, WSGI, ASGI) defaults to ``agentclash.settings.local``;
production is chosen explicitly with ``DJANGO_SETTINGS_MODULE=agentclash.settings.production``.
"""

from __future__ import annotations

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "agentclash.settings.local")
application = get_wsgi_application()

"""The ASGI application (an ASGI server such as uvicorn: ``agentclash.asgi:application``).

Every entry point (manage.py, Celery, WSGI, ASGI) defaults to ``agentclash.settings.local``;
production is chosen explicitly with ``DJANGO_SETTINGS_MODULE=agentclash.settings.production``.
"""

from __future__ import annotations

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "agentclash.settings.local")
application = get_asgi_application()

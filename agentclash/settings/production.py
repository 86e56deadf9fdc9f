"""Production: every secret must come from the environment; fail loudly without it."""

from __future__ import annotations

from django.core.exceptions import ImproperlyConfigured

from agentclash.settings.base import *  # noqa: F403
from agentclash.settings.base import env

DEBUG = False
SECRET_KEY = env.str("DJANGO_SECRET_KEY", default="")
SECRETS_ENCRYPTION_KEYS = env.list("SECRETS_ENCRYPTION_KEY", default=[])
if not SECRET_KEY:
    raise ImproperlyConfigured("DJANGO_SECRET_KEY must be set in production.")
if not SECRETS_ENCRYPTION_KEYS:
    raise ImproperlyConfigured(
        "SECRETS_ENCRYPTION_KEY must be set in production (comma-separated '<key id>:<base64 32-byte key>', newest first)."
    )
if not env.str("DATABASE_URL", default=""):
    raise ImproperlyConfigured("DATABASE_URL must be set in production.")
if env("SANDBOX_ALLOW_UNISOLATED"):
    raise ImproperlyConfigured("SANDBOX_ALLOW_UNISOLATED is for development only.")

SESSION_COOKIE_SECURE = env.bool("SESSION_COOKIE_SECURE", default=True)
CSRF_COOKIE_SECURE = env.bool("CSRF_COOKIE_SECURE", default=True)
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SECURE_HSTS_SECONDS = env.int("SECURE_HSTS_SECONDS", default=0)
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"},
}

"""Production: every secret must come from the environment; fail loudly without it."""

from __future__ import annotations

from django.core.exceptions import ImproperlyConfigured

from agentclash.settings.base import *  # noqa: F403
from agentclash.settings.base import SANDBOX_ALLOW_UNISOLATED, SECRET_KEY, SECRETS_ENCRYPTION_KEYS, env

# Each refusal is tested in agentclash/tests/test_settings.py.
DEBUG = False
if not SECRET_KEY:
    raise ImproperlyConfigured("DJANGO_SECRET_KEY must be set in production.")
if not SECRETS_ENCRYPTION_KEYS:
    raise ImproperlyConfigured(
        "SECRETS_ENCRYPTION_KEY must be set in production (comma-separated '<key id>:<base64 32-byte key>', newest first)."
    )
# base.py falls back to a SQLite file under var/; production must name its database.
if not env.str("DATABASE_URL", default=""):
    raise ImproperlyConfigured("DATABASE_URL must be set in production.")
if SANDBOX_ALLOW_UNISOLATED:
    raise ImproperlyConfigured("SANDBOX_ALLOW_UNISOLATED is for development only.")

# HTTPS only, by default: a deployment behind plain HTTP must opt out explicitly.
SESSION_COOKIE_SECURE = env.bool("SESSION_COOKIE_SECURE", default=True)
CSRF_COOKIE_SECURE = env.bool("CSRF_COOKIE_SECURE", default=True)
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SECURE_SSL_REDIRECT = env.bool("SECURE_SSL_REDIRECT", default=True)
# Load balancers probe health over plain HTTP; a redirect would read as "down".
SECURE_REDIRECT_EXEMPT = [r"^healthz$"]
SECURE_HSTS_SECONDS = env.int("SECURE_HSTS_SECONDS", default=31536000)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env.bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", default=False)
SECURE_HSTS_PRELOAD = env.bool("SECURE_HSTS_PRELOAD", default=False)
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"},
    "artifacts": STORAGES["artifacts"],  # noqa: F405
}

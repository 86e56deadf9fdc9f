"""Production settings are HTTPS-only by default (HSTS, SSL redirect, secure cookies), overridable."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
NAMES = [
    "SECURE_HSTS_SECONDS",
    "SECURE_HSTS_INCLUDE_SUBDOMAINS",
    "SECURE_SSL_REDIRECT",
    "SECURE_REDIRECT_EXEMPT",
    "SESSION_COOKIE_SECURE",
    "CSRF_COOKIE_SECURE",
    "SECURE_PROXY_SSL_HEADER",
    "DEBUG",
]
REQUIRED = {
    "DJANGO_SECRET_KEY": "x" * 50,
    "SECRETS_ENCRYPTION_KEY": "k1:" + "A" * 43 + "=",
    "DATABASE_URL": "postgres://user@127.0.0.1:5432/none",
}


def _production(**overrides: str) -> dict:
    """The production settings module's values, loaded in a fresh interpreter with this environment."""
    env = {key: value for key, value in os.environ.items() if key not in {*NAMES, "DJANGO_SETTINGS_MODULE"}}
    env.update(REQUIRED)
    env.update(overrides)
    code = (
        f"import json, agentclash.settings.production as s; print(json.dumps({{n: getattr(s, n, None) for n in {NAMES!r}}}, default=list))"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, check=True, timeout=60)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_production_is_https_only_by_default():
    values = _production()
    assert values["SECURE_HSTS_SECONDS"] == 31536000
    assert values["SECURE_SSL_REDIRECT"] is True
    assert values["SESSION_COOKIE_SECURE"] is True
    assert values["CSRF_COOKIE_SECURE"] is True
    assert values["SECURE_PROXY_SSL_HEADER"] == ["HTTP_X_FORWARDED_PROTO", "https"]
    assert values["SECURE_REDIRECT_EXEMPT"] == ["^healthz$"]
    assert values["DEBUG"] is False


def test_the_environment_overrides_hsts_and_the_redirect():
    values = _production(SECURE_HSTS_SECONDS="0", SECURE_SSL_REDIRECT="false", SECURE_HSTS_INCLUDE_SUBDOMAINS="true")
    assert values["SECURE_HSTS_SECONDS"] == 0
    assert values["SECURE_SSL_REDIRECT"] is False
    assert values["SECURE_HSTS_INCLUDE_SUBDOMAINS"] is True


def test_production_passes_djangos_deployment_checks_for_https():
    env = {key: value for key, value in os.environ.items() if key != "DJANGO_SETTINGS_MODULE"}
    env.update(REQUIRED, DJANGO_SETTINGS_MODULE="agentclash.settings.production")
    out = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "CRITICAL"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    report = out.stdout + out.stderr
    for check in ("security.W004", "security.W008", "security.W012", "security.W016"):
        assert check not in report, report  # HSTS, SSL redirect, session and CSRF cookies secure

"""Keys for local development, generated once into ``var/`` so restarts keep sessions and secrets."""

from __future__ import annotations

import base64
import os
import secrets
import sys
from collections.abc import Callable
from pathlib import Path


def _read_or_create(path: Path, make: Callable[[], str], label: str) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists():
        return path.read_text().strip()
    value = make()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write(value)
    print(f"agentclash: generated a development {label} in {path} (set it in the environment in production)", file=sys.stderr)
    return value


def dev_secret_key(var_dir: Path) -> str:
    return _read_or_create(var_dir / "dev-secret-key", lambda: secrets.token_urlsafe(50), "DJANGO_SECRET_KEY")


def dev_secrets_key(var_dir: Path) -> str:
    # Format "<key id>:<base64 32-byte AES key>", the same as SECRETS_ENCRYPTION_KEY in production.
    return _read_or_create(
        var_dir / "dev-secrets-key",
        lambda: "dev1:" + base64.urlsafe_b64encode(os.urandom(32)).decode(),
        "SECRETS_ENCRYPTION_KEY",
    )

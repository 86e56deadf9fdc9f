"""Local development: safe defaults so a fresh clone runs with nothing but Python."""

from __future__ import annotations

from agentclash.settings.base import *  # noqa: F403
from agentclash.settings.base import SECRET_KEY, SECRETS_ENCRYPTION_KEYS, VAR_DIR, env
from agentclash.settings.devkeys import dev_secret_key, dev_secrets_key

DEBUG = env.bool("DEBUG", default=True)
SECRET_KEY = SECRET_KEY or dev_secret_key(VAR_DIR)
SECRETS_ENCRYPTION_KEYS = SECRETS_ENCRYPTION_KEYS or [dev_secrets_key(VAR_DIR)]

"""AES-256-GCM for workspace secrets, with key ids so keys can be rotated.

Ciphertext layout (bytes)::

    0x01 | len(key_id) | key_id (ASCII) | nonce (12) | AES-GCM ciphertext + 16-byte tag

The associated data binds a ciphertext to its workspace, its secret key name and its
encryption key id, so a ciphertext copied onto another row (or another workspace) fails to
decrypt instead of silently yielding someone else's value.

Keys come from ``settings.SECRETS_ENCRYPTION_KEYS``: ``"<key id>:<urlsafe-base64 32-byte key>"``,
newest first. The newest key encrypts; every listed key decrypts.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import os
import re

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

FORMAT_VERSION = 1
NONCE_BYTES = 12
KEY_ID_RE = re.compile(r"^[A-Za-z0-9_.-]{1,32}$")


class SecretDecryptionError(Exception):
    """A stored secret could not be decrypted. The message never contains key material or values."""


@dataclasses.dataclass(frozen=True)
class KeyRing:
    keys: dict[str, bytes]  # key id → 32 raw bytes, insertion order = newest first

    @property
    def current_id(self) -> str:
        return next(iter(self.keys))

    @property
    def current(self) -> bytes:
        return self.keys[self.current_id]


def parse_keys(entries: list[str] | tuple[str, ...]) -> KeyRing:
    """Parse ``<key id>:<base64 key>`` entries. Errors name the entry's position, never its key."""
    keys: dict[str, bytes] = {}
    for position, entry in enumerate(entries, start=1):
        entry = (entry or "").strip()
        if not entry:
            continue
        key_id, sep, encoded = entry.partition(":")
        if not sep or not KEY_ID_RE.match(key_id):
            raise ImproperlyConfigured(
                f"SECRETS_ENCRYPTION_KEY entry {position} must look like '<key id>:<urlsafe-base64 32-byte key>' "
                "with a key id of letters, digits, '.', '_' or '-' (max 32)."
            )
        try:
            raw = base64.urlsafe_b64decode(encoded.strip() + "=" * (-len(encoded.strip()) % 4))
        except (binascii.Error, ValueError):
            raw = b""
        if len(raw) != 32:
            raise ImproperlyConfigured(f"SECRETS_ENCRYPTION_KEY entry {position} ({key_id}) is not a base64-encoded 32-byte key.")
        if key_id in keys:
            raise ImproperlyConfigured(f"SECRETS_ENCRYPTION_KEY lists the key id {key_id!r} twice.")
        keys[key_id] = raw
    if not keys:
        raise ImproperlyConfigured("SECRETS_ENCRYPTION_KEY is not set; workspace secrets cannot be encrypted or read.")
    return KeyRing(keys=keys)


def keyring() -> KeyRing:
    return parse_keys(list(getattr(settings, "SECRETS_ENCRYPTION_KEYS", []) or []))


def _aad(workspace_id: int, secret_key: str, key_id: str) -> bytes:
    return f"agentclash-secret/v{FORMAT_VERSION}|workspace={workspace_id}|key={secret_key}|kid={key_id}".encode()


def encrypt(*, workspace_id: int, secret_key: str, plaintext: str, ring: KeyRing | None = None) -> tuple[bytes, str]:
    """Encrypt under the newest key. Returns (ciphertext, key id)."""
    ring = ring or keyring()
    key_id = ring.current_id
    nonce = os.urandom(NONCE_BYTES)
    sealed = AESGCM(ring.current).encrypt(nonce, plaintext.encode("utf-8"), _aad(workspace_id, secret_key, key_id))
    kid = key_id.encode("ascii")
    return bytes([FORMAT_VERSION, len(kid)]) + kid + nonce + sealed, key_id


def key_id_of(ciphertext: bytes) -> str:
    data = bytes(ciphertext)
    if len(data) < 2 or data[0] != FORMAT_VERSION:
        raise SecretDecryptionError("unsupported secret ciphertext format")
    length = data[1]
    return data[2 : 2 + length].decode("ascii", errors="replace")


def decrypt(*, workspace_id: int, secret_key: str, ciphertext: bytes, ring: KeyRing | None = None) -> str:
    ring = ring or keyring()
    data = bytes(ciphertext)
    key_id = key_id_of(data)
    start = 2 + data[1]
    nonce, sealed = data[start : start + NONCE_BYTES], data[start + NONCE_BYTES :]
    key = ring.keys.get(key_id)
    if key is None:
        raise SecretDecryptionError(f"secret {secret_key!r} is encrypted with key id {key_id!r}, which is not configured")
    try:
        plain = AESGCM(key).decrypt(nonce, sealed, _aad(workspace_id, secret_key, key_id))
    except InvalidTag:
        raise SecretDecryptionError(f"secret {secret_key!r} failed authentication (tampered, or moved from another row)") from None
    return plain.decode("utf-8")

"""Re-encrypt every workspace secret under the newest key in SECRETS_ENCRYPTION_KEY."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from secrets_app import crypto
from secrets_app.services import secrets_reencrypt_all


class Command(BaseCommand):
    help = (
        "Re-encrypt every workspace secret under the newest key (the first entry of SECRETS_ENCRYPTION_KEY). "
        "Keep the old keys listed until this has finished; remove them afterwards."
    )

    def handle(self, *args: object, **options: object) -> None:
        ring = crypto.keyring()
        try:
            done, total = secrets_reencrypt_all()
        except crypto.SecretDecryptionError as exc:
            raise CommandError(f"{exc}. Add the old key back to SECRETS_ENCRYPTION_KEY (after the new one) and retry.") from None
        self.stdout.write(
            self.style.SUCCESS(f"Re-encrypted {done} of {total} secrets under key id {ring.current_id!r}; the rest already used it.")
        )

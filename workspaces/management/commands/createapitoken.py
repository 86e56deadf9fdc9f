from __future__ import annotations

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from workspaces import services


class Command(BaseCommand):
    help = "Create an API token for a user and print it (it is shown only once)."

    def add_arguments(self, parser) -> None:
        parser.add_argument("username")
        parser.add_argument("--name", default="CLI token")

    def handle(self, *args, username: str, name: str, **options) -> None:
        user = get_user_model().objects.filter(username=username).first()
        if user is None:
            raise CommandError(f"No user named {username!r}.")
        _, raw = services.api_token_create(user=user, name=name)
        self.stdout.write(raw)

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from core.errors import DomainError
from workspaces import services
from workspaces.models import Workspace


class Command(BaseCommand):
    help = "Create a workspace with an admin (the user is created if missing and its password printed)."

    def add_arguments(self, parser) -> None:
        parser.add_argument("slug")
        parser.add_argument("--name", required=True)
        parser.add_argument("--admin", required=True, metavar="USERNAME")

    def handle(self, *args, slug: str, name: str, admin: str, **options) -> None:
        if Workspace.objects.filter(slug=slug).exists():
            raise CommandError(f"A workspace with the slug {slug!r} already exists.")
        try:
            user, password = services.user_get_or_create(username=admin)
            workspace = services.workspace_create(name=name, slug=slug, admin=user)
        except DomainError as exc:
            raise CommandError(exc.message) from exc
        self.stdout.write(f"Created workspace {workspace.slug} with admin {user.username}")
        if password:
            self.stdout.write(f"Created user {user.username} with password: {password}")

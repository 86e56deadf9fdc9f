from __future__ import annotations

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from core.errors import DomainError
from workspaces import services
from workspaces.models import Role, Workspace


class Command(BaseCommand):
    help = "Add a user to a workspace with a role (--create makes a missing user and prints its password once)."

    def add_arguments(self, parser) -> None:
        parser.add_argument("slug")
        parser.add_argument("username")
        parser.add_argument("--role", choices=Role.values, default=Role.MEMBER)
        parser.add_argument("--create", action="store_true", help="create the user if missing and print a generated password")

    def handle(self, *args, slug: str, username: str, role: str, create: bool, **options) -> None:
        workspace = Workspace.objects.filter(slug=slug).first()
        if workspace is None:
            raise CommandError(f"No workspace with the slug {slug!r}.")
        password = None
        try:
            if create:
                user, password = services.user_get_or_create(username=username)
            else:
                user = get_user_model().objects.filter(username=username).first()
                if user is None:
                    raise CommandError(f"No user named {username!r} (add --create to create it).")
            services.membership_add(workspace=workspace, user=user, role=role)
        except DomainError as exc:
            raise CommandError(exc.message) from exc
        self.stdout.write(f"Added {username} to {slug} as {role}")
        if password:
            self.stdout.write(f"Created user {username} with password: {password}")

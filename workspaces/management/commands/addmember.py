from __future__ import annotations

from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from workspaces import services
from workspaces.models import Role, Workspace


class Command(BaseCommand):
    help = "Add an existing user to a workspace with a role."

    def add_arguments(self, parser) -> None:  # type: ignore[no-untyped-def]
        parser.add_argument("slug")
        parser.add_argument("username")
        parser.add_argument("--role", choices=Role.values, default=Role.MEMBER)

    def handle(self, *args, slug: str, username: str, role: str, **options) -> None:  # type: ignore[no-untyped-def]
        workspace = Workspace.objects.filter(slug=slug).first()
        if workspace is None:
            raise CommandError(f"No workspace with the slug {slug!r}.")
        user = get_user_model().objects.filter(username=username).first()
        if user is None:
            raise CommandError(f"No user named {username!r}.")
        try:
            services.membership_add(workspace=workspace, user=user, role=role)
        except ValidationError as exc:
            raise CommandError("; ".join(exc.messages)) from exc
        self.stdout.write(f"Added {username} to {slug} as {role}")

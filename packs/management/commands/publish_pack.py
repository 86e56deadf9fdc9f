"""Publish a pack bundle into a workspace: exit 0 published, 1 invalid or conflicting, 2 usage error."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from packs import services
from packs.management.commands.validate_pack import error_line
from workspaces.models import Workspace


class Command(BaseCommand):
    help = "Publish a challenge-pack bundle as a new immutable version in a workspace."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file", metavar="FILE")
        parser.add_argument("--workspace", required=True, metavar="SLUG")
        parser.add_argument("--user", metavar="USERNAME", help="recorded as the publisher")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            raw = Path(options["file"]).read_bytes()
        except OSError as exc:
            raise CommandError(f"{options['file']}: cannot read file: {exc.strerror or exc}", returncode=2) from None
        try:
            workspace = Workspace.objects.get(slug=options["workspace"])
        except Workspace.DoesNotExist:
            raise CommandError(f"No workspace with slug {options['workspace']!r}.", returncode=2) from None
        user = None
        if options.get("user"):
            try:
                user = get_user_model().objects.get(username=options["user"])
            except get_user_model().DoesNotExist:
                raise CommandError(f"No user {options['user']!r}.", returncode=2) from None
        try:
            version = services.pack_publish(workspace=workspace, user=user, source=raw)
        except services.PackInvalid as exc:
            self.stderr.write(f"{options['file']}: invalid")
            for error in exc.errors:
                self.stderr.write(f"  {error_line(error)}")
            sys.exit(1)
        except services.PackConflict as exc:
            self.stderr.write(f"{options['file']}: {exc.code}: {exc.message}")
            sys.exit(1)
        self.stdout.write(
            f"Published {version.pack.slug} v{version.number} (pack {version.pack_id}, version {version.pk}, "
            f"{version.cases.count()} cases, checksum {version.manifest_checksum})"
        )

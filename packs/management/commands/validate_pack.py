"""Validate pack bundles: exit 0 if all are valid, 1 if any is invalid, 2 on usage errors."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from packs import services


def error_line(error: dict[str, Any]) -> str:
    """``field message (line N)``; decode errors have no field and stand on their own."""
    text = f"{error['field']} {error['message']}" if error.get("field") else str(error["message"])
    return f"{text} (line {error['line']})" if error.get("line") else text


class Command(BaseCommand):
    help = "Validate challenge-pack bundle files. Exit 0 all valid, 1 any invalid, 2 usage error (e.g. unreadable file)."
    requires_migrations_checks = False
    requires_system_checks: list = []

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("files", nargs="+", metavar="FILE", help="bundle YAML files")
        parser.add_argument("--json", action="store_true", help="one JSON object per file per line")

    def handle(self, *args: Any, **options: Any) -> None:
        sources: list[tuple[str, bytes]] = []
        for name in options["files"]:
            try:
                sources.append((name, Path(name).read_bytes()))
            except OSError as exc:
                raise CommandError(f"{name}: cannot read file: {exc.strerror or exc}", returncode=2) from None
        any_invalid = False
        for name, raw in sources:
            try:
                services.bundle_validate(raw)
                errors: list[dict[str, Any]] = []
            except services.PackInvalid as exc:
                errors = exc.errors
            any_invalid = any_invalid or bool(errors)
            if options["json"]:
                self.stdout.write(json.dumps({"file": name, "valid": not errors, "errors": errors}, ensure_ascii=False))
                continue
            self.stdout.write(f"{name}: {'invalid' if errors else 'valid'}")
            for error in errors:
                self.stdout.write(f"  {error_line(error)}")
        self.stdout.flush()
        if any_invalid:
            sys.exit(1)

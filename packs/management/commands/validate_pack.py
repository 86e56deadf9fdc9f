"""Validate pack bundles: exit 0 if all are valid, 1 if any is invalid, 2 on usage errors.

Warnings are printed (and in ``--json``, listed as ``"warnings"``) but never change the exit code.
"""

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


def warning_line(warning: dict[str, Any]) -> str:
    """``warning: path message (line N)``."""
    return "warning: " + error_line({"field": warning.get("path"), "message": warning["message"], "line": warning.get("line")})


class Command(BaseCommand):
    help = "Validate challenge-pack bundle files. Exit 0 all valid, 1 any invalid, 2 usage error (e.g. unreadable file)."
    requires_migrations_checks = False
    requires_system_checks: list = []

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("files", nargs="+", metavar="FILE", help="bundle YAML files")
        parser.add_argument("--json", action="store_true", help='one {"file", "valid", "errors", "warnings"} JSON object per file per line')

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
                result = services.bundle_validate(raw)
                errors: list[dict[str, Any]] = []
                warnings = services.warning_dicts(result)
            except services.PackInvalid as exc:
                errors, warnings = exc.errors, exc.warnings
            any_invalid = any_invalid or bool(errors)
            if options["json"]:
                line = {"file": name, "valid": not errors, "errors": errors, "warnings": warnings}
                self.stdout.write(json.dumps(line, ensure_ascii=False))
                continue
            counted = f" ({len(warnings)} warning{'s' if len(warnings) != 1 else ''})" if warnings else ""
            self.stdout.write(f"{name}: {'invalid' if errors else 'valid'}{counted}")
            for error in errors:
                self.stdout.write(f"  {error_line(error)}")
            for warning in warnings:
                self.stdout.write(f"  {warning_line(warning)}")
        self.stdout.flush()
        if any_invalid:
            sys.exit(1)

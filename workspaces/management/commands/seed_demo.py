from __future__ import annotations

import os

from django.core.management.base import BaseCommand

from workspaces.demo import demo_seed


class Command(BaseCommand):
    help = "Create (idempotently) the demo workspace, its admin user and demo data; print how to log in."

    def add_arguments(self, parser) -> None:  # type: ignore[no-untyped-def]
        parser.add_argument("--url", default=os.environ.get("AGENTCLASH_URL", "http://127.0.0.1:8000/"))

    def handle(self, *args, url: str, **options) -> None:  # type: ignore[no-untyped-def]
        result = demo_seed()
        self.stdout.write("")
        self.stdout.write(self.style.SUCCESS("AgentClash is ready."))
        self.stdout.write(f"  URL:      {url}")
        self.stdout.write(f"  User:     {result.username}")
        self.stdout.write(f"  Password: {result.password}")
        for line in result.notes:
            self.stdout.write(f"  {line}")
        self.stdout.write("")

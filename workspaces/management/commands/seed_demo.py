from __future__ import annotations

import os

from django.core.management.base import BaseCommand

from workspaces.demo import demo_seed


class Command(BaseCommand):
    help = "Create (idempotently) the demo workspace, its admin user, demo data and the Django admin's superuser; print how to log in."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--url", default=os.environ.get("AGENTCLASH_URL", "http://127.0.0.1:8000/"))
        parser.add_argument("--no-runs", action="store_true", help="seed the data only, start no demo run")

    def handle(self, *args, url: str, no_runs: bool = False, **options) -> None:
        result = demo_seed(with_runs=not no_runs)
        self.stdout.write("")
        self.stdout.write(self.style.SUCCESS("AgentClash is ready."))
        self.stdout.write(f"  URL:      {url}")
        self.stdout.write(f"  User:     {result.username}")
        self.stdout.write(f"  Password: {result.password}")
        for line in result.notes:
            self.stdout.write(f"  {line}")
        admin_url = url.rstrip("/") + "/admin/"
        if result.superuser_password:
            self.stdout.write("")
            self.stdout.write(self.style.WARNING(f"Django admin ({admin_url}): superuser {result.superuser_username!r}, password:"))
            self.stdout.write(f"  {result.superuser_password}")
            self.stdout.write("  This password is shown only now and stored nowhere; note it or set your own with")
            self.stdout.write(f"  `python manage.py changepassword {result.superuser_username}`.")
        else:
            self.stdout.write(
                f"  Django admin: {admin_url} as {result.superuser_username!r} (password shown when it was created; "
                f"`python manage.py changepassword {result.superuser_username}` sets a new one)"
            )
        self.stdout.write("")

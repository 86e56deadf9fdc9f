"""Demo data for `make run`: idempotent, safe to run on every start.

Other apps extend the demo through ``DEMO_SEEDERS`` (dotted paths of functions taking the
workspace and admin user and returning a list of notes), so this module never imports them.
"""

from __future__ import annotations

import dataclasses
import secrets

from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils.module_loading import import_string

from workspaces.models import Role, Workspace, WorkspaceMembership

DEMO_USERNAME = "demo"
DEMO_PASSWORD = "demo-password"
DEMO_WORKSPACE_SLUG = "demo"
# The Django admin's superuser: its own account with a generated password, printed once when it
# is created and never stored in plain text. The demo user is an ordinary workspace admin.
SUPERUSER_USERNAME = "admin"

# Each app's seeder, in order: deployments before the packs that their scripts target.
DEMO_SEEDERS: list[str] = [
    "infrastructure.demo.seed",
    "packs.demo_seed.seed",
]
# Demo runs, after the data they use; only `seed_demo` asks for them (tests that seed the demo get none).
DEMO_RUN_SEEDERS: list[str] = [
    "runs.demo.seed",
]


@dataclasses.dataclass
class DemoResult:
    username: str
    password: str
    workspace: Workspace
    notes: list[str]
    superuser_username: str = SUPERUSER_USERNAME
    # Only when this run created the superuser; None on every later run.
    superuser_password: str | None = None


@transaction.atomic
def demo_seed(*, with_runs: bool = False) -> DemoResult:
    User = get_user_model()
    user, created = User.objects.get_or_create(username=DEMO_USERNAME, defaults={"email": "demo@example.com"})
    if created or not user.check_password(DEMO_PASSWORD):
        user.set_password(DEMO_PASSWORD)
        user.save(update_fields=["password"])
    if user.is_staff or user.is_superuser:
        # Databases seeded before the demo user lost its superuser flag: a well-known password
        # must not open the Django admin.
        user.is_staff = user.is_superuser = False
        user.save(update_fields=["is_staff", "is_superuser"])
    superuser_password = _superuser_ensure()
    workspace, _ = Workspace.objects.get_or_create(slug=DEMO_WORKSPACE_SLUG, defaults={"name": "Demo workspace"})
    WorkspaceMembership.objects.update_or_create(workspace=workspace, user=user, defaults={"role": Role.ADMIN})
    notes: list[str] = []
    for path in DEMO_SEEDERS + (DEMO_RUN_SEEDERS if with_runs else []):
        notes.extend(import_string(path)(workspace=workspace, user=user) or [])
    return DemoResult(
        username=DEMO_USERNAME, password=DEMO_PASSWORD, workspace=workspace, notes=notes, superuser_password=superuser_password
    )


def _superuser_ensure() -> str | None:
    """Create the admin superuser if missing and return its new password; None if it existed."""
    User = get_user_model()
    if User.objects.filter(username=SUPERUSER_USERNAME).exists():
        return None
    password = secrets.token_urlsafe(18)
    User.objects.create_superuser(username=SUPERUSER_USERNAME, email="", password=password)
    return password

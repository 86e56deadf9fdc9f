"""Demo data for `make run`: idempotent, safe to run on every start.

Other apps extend the demo through ``DEMO_SEEDERS`` (dotted paths of functions taking the
workspace and admin user and returning a list of notes), so this module never imports them.
"""

from __future__ import annotations

import dataclasses

from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils.module_loading import import_string

from workspaces.models import Role, Workspace, WorkspaceMembership

DEMO_USERNAME = "demo"
DEMO_PASSWORD = "demo-password"
DEMO_WORKSPACE_SLUG = "demo"

# Each app's seeder, in order: deployments before the packs that their scripts target.
DEMO_SEEDERS: list[str] = [
    "infrastructure.demo.seed",
    "packs.demo_seed.seed",
]


@dataclasses.dataclass
class DemoResult:
    username: str
    password: str
    workspace: Workspace
    notes: list[str]


@transaction.atomic
def demo_seed() -> DemoResult:
    User = get_user_model()
    user, created = User.objects.get_or_create(
        username=DEMO_USERNAME, defaults={"email": "demo@example.com", "is_staff": True, "is_superuser": True}
    )
    if created or not user.check_password(DEMO_PASSWORD):
        user.set_password(DEMO_PASSWORD)
        user.save(update_fields=["password"])
    workspace, _ = Workspace.objects.get_or_create(slug=DEMO_WORKSPACE_SLUG, defaults={"name": "Demo workspace"})
    WorkspaceMembership.objects.update_or_create(workspace=workspace, user=user, defaults={"role": Role.ADMIN})
    notes: list[str] = []
    for path in DEMO_SEEDERS:
        notes.extend(import_string(path)(workspace=workspace, user=user) or [])
    return DemoResult(username=DEMO_USERNAME, password=DEMO_PASSWORD, workspace=workspace, notes=notes)

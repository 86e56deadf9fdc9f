"""Demo packs for `make run`: publishes packs/demo/*.yaml into the demo workspace once."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from packs import services
from workspaces.models import Workspace

logger = logging.getLogger(__name__)

DEMO_DIR = Path(__file__).resolve().parent / "demo"
DEMO_FILES = ("demo-file-fixes.yaml", "demo-prompt-eval.yaml")


def seed(*, workspace: Workspace, user: Any) -> list[str]:
    notes: list[str] = []
    for name in DEMO_FILES:
        path = DEMO_DIR / name
        try:
            source = path.read_text(encoding="utf-8")
        except OSError:
            notes.append(f"Demo pack {name} is missing; skipped.")
            continue
        try:
            version = services.pack_publish(workspace=workspace, user=user, source=source)
        except services.PackConflict as exc:
            if exc.code != services.PackConflict.VERSION_EXISTS:
                notes.append(f"Demo pack {name} not published: {exc.message}")
                continue
            # Already published: seeding is idempotent, and so is what it prints.
            check = services.bundle_validate(source)
            manifest = check.manifest or {}
            notes.append(f"Demo pack {manifest['pack']['name']} v{manifest['version']['number']} is ready.")
            continue
        except services.PackInvalid as exc:
            logger.warning("Demo pack %s is invalid: %s", name, exc)
            notes.append(f"Demo pack {name} is invalid: {exc}")
            continue
        notes.append(f"Demo pack {version.pack.name} v{version.number} is ready.")
    return notes

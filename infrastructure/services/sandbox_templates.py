"""Writes for the installation's sandbox templates (operators: the admin and the API)."""

from __future__ import annotations

import posixpath
from typing import Any

from django.db import transaction

from core.errors import DomainError
from engine.sandbox.packages import PACKAGE_RE, normalise
from infrastructure.models import SandboxTemplate
from infrastructure.services.owned import UNSET, apply_changes, check_known_fields, save_checked

SANDBOX_TEMPLATE_FIELDS = ("name", "packages", "read_only_paths")
MAX_PACKAGES = 50
MAX_PATHS = 20
PATH_ROOT = "/opt/"


def _packages(value: Any) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(p, str) for p in value):
        raise DomainError('packages must be a list of Debian package names, e.g. ["tree"].', field="packages")
    names = list(normalise(value))
    if len(names) > MAX_PACKAGES:
        raise DomainError(f"packages: at most {MAX_PACKAGES} packages per template.", field="packages")
    for name in names:
        if not PACKAGE_RE.match(name):
            raise DomainError(f'packages: "{name}" is not a valid apt package name.', field="packages")
    return names


def _paths(value: Any) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(p, str) for p in value):
        raise DomainError("read_only_paths must be a list of absolute paths under /opt/.", field="read_only_paths")
    paths: list[str] = []
    for raw in value:
        path = posixpath.normpath(raw.strip())
        if (
            not raw.strip().startswith(PATH_ROOT)
            or not path.startswith(PATH_ROOT)
            or path == "/opt/agentclash"
            or path.startswith("/opt/agentclash/")
        ):
            raise DomainError(
                f'read_only_paths: "{raw}" must be an absolute path under /opt/ (not /opt/agentclash, which is ours).',
                field="read_only_paths",
            )
        if path not in paths:
            paths.append(path)
    if len(paths) > MAX_PATHS:
        raise DomainError(f"read_only_paths: at most {MAX_PATHS} paths per template.", field="read_only_paths")
    return paths


def _write(template: SandboxTemplate, changes: dict[str, Any], *, creating: bool) -> SandboxTemplate:
    if changes.get("packages", UNSET) is not UNSET:
        changes["packages"] = _packages(changes["packages"])
    if changes.get("read_only_paths", UNSET) is not UNSET:
        changes["read_only_paths"] = _paths(changes["read_only_paths"])
    if isinstance(changes.get("name"), str):
        changes["name"] = changes["name"].strip()
    changed = apply_changes(template, changes)
    save_checked(template, changed, creating=creating)
    return template


@transaction.atomic
def sandbox_template_create(
    *, template_id: str, name: str, packages: list[str] | None = None, read_only_paths: list[str] | None = None, actor: Any = None
) -> SandboxTemplate:
    template_id = (template_id or "").strip()
    if SandboxTemplate.objects.filter(template_id=template_id).exists():
        raise DomainError(f"A sandbox template with the id “{template_id}” already exists.", field="template_id")
    changes = {"name": name, "packages": packages or [], "read_only_paths": read_only_paths or []}
    return _write(SandboxTemplate(template_id=template_id), changes, creating=True)


@transaction.atomic
def sandbox_template_update(*, template: SandboxTemplate, actor: Any = None, **fields: Any) -> SandboxTemplate:
    check_known_fields(fields, SANDBOX_TEMPLATE_FIELDS, "sandbox template")
    template = SandboxTemplate.objects.select_for_update().get(pk=template.pk)
    return _write(template, dict(fields), creating=False)

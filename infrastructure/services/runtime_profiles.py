"""Writes for runtime profiles: how an agent runs (execution target, limits, sandbox overrides)."""

from __future__ import annotations

from typing import Any

from django.db import transaction

from core.errors import DomainError
from infrastructure.models import RuntimeProfile
from infrastructure.services.owned import apply_changes, archive, audit_write, check_known_fields, check_unique, save_checked
from workspaces.models import Workspace

RUNTIME_PROFILE_FIELDS = (
    "name", "execution_target", "max_iterations", "max_tool_calls", "step_timeout_seconds", "run_timeout_seconds",
    "max_in_flight_cases", "allow_shell", "allow_network", "max_workspace_bytes",
)  # fmt: skip


def _runtime_profile_write(*, profile: RuntimeProfile, changes: dict[str, Any], actor: Any, creating: bool) -> RuntimeProfile:
    if isinstance(changes.get("name"), str):
        changes["name"] = changes["name"].strip()
    changed = apply_changes(profile, changes)
    check_unique(profile, "name", "runtime profile")
    if profile.run_timeout_seconds and profile.step_timeout_seconds and profile.step_timeout_seconds > profile.run_timeout_seconds:
        raise DomainError("The step timeout cannot be longer than the run timeout.", field="step_timeout_seconds")
    save_checked(profile, changed, creating=creating)
    audit_write(profile, noun="runtime_profile", changed=changed, creating=creating, actor=actor)
    return profile


@transaction.atomic
def runtime_profile_create(*, workspace: Workspace, name: str, actor: Any = None, **fields: Any) -> RuntimeProfile:
    check_known_fields(fields, RUNTIME_PROFILE_FIELDS, "runtime profile")
    profile = RuntimeProfile(workspace=workspace)
    return _runtime_profile_write(profile=profile, changes={"name": name, **fields}, actor=actor, creating=True)


@transaction.atomic
def runtime_profile_update(*, profile: RuntimeProfile, actor: Any = None, **fields: Any) -> RuntimeProfile:
    """Change the given fields (``RUNTIME_PROFILE_FIELDS``, and ``status`` for operators)."""
    check_known_fields(fields, (*RUNTIME_PROFILE_FIELDS, "status"), "runtime profile")
    profile = RuntimeProfile.objects.select_for_update().select_related("workspace").get(pk=profile.pk)
    return _runtime_profile_write(profile=profile, changes=fields, actor=actor, creating=False)


@transaction.atomic
def runtime_profile_archive(*, profile: RuntimeProfile, actor: Any = None) -> RuntimeProfile:
    return archive(profile, field="status", actor=actor, action="runtime_profile.archived")

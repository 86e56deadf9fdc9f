"""Writes for tool resources: named tool definitions kept at workspace level."""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.utils.text import slugify

from bundle import validate_composed_tool
from core.errors import DomainError
from engine.tools.registry import catalogue
from infrastructure.models import ToolResource
from infrastructure.services.owned import UNSET, apply_changes, archive, audit_write, check_known_fields, check_unique, save_checked
from workspaces.models import Workspace

TOOL_RESOURCE_FIELDS = ("name", "slug", "tool_kind", "capability_key", "definition", "lifecycle_status")


def tool_definition_errors(*, tool_kind: str, definition: Any) -> list[str]:
    if not isinstance(definition, dict):
        return ["definition: must be a JSON object"]
    if tool_kind == ToolResource.ToolKind.COMPOSED:
        return [
            f"{error.field}: {error.message}" if error.field else error.message
            for error in validate_composed_tool(definition, field_prefix="definition")
        ]
    primitive = definition.get("primitive")
    if primitive is not None:
        names = [entry["name"] for entry in catalogue()]
        if primitive not in names:
            return [f"definition.primitive: unknown primitive “{primitive}”; use one of {', '.join(names)}"]
    return []


def _tool_resource_write(*, tool: ToolResource, changes: dict[str, Any], actor: Any, creating: bool) -> ToolResource:
    for field in ("name", "slug", "capability_key"):
        if isinstance(changes.get(field), str):
            changes[field] = changes[field].strip()
    if changes.get("definition", UNSET) is None:
        changes["definition"] = {}
    if creating and not changes.get("slug"):
        changes["slug"] = slugify(changes.get("name") or "")[:100]
    changed = apply_changes(tool, changes)
    check_unique(tool, "slug", "tool resource")
    if errors := tool_definition_errors(tool_kind=tool.tool_kind, definition=tool.definition):
        raise DomainError("; ".join(errors), field="definition")
    save_checked(tool, changed, creating=creating)
    audit_write(tool, noun="tool_resource", changed=changed, creating=creating, actor=actor)
    return tool


@transaction.atomic
def tool_resource_create(
    *, workspace: Workspace, name: str, tool_kind: str, capability_key: str, slug: str = "", definition: dict | None = None,
    lifecycle_status: str = ToolResource.Lifecycle.ACTIVE, actor: Any = None,
) -> ToolResource:  # fmt: skip
    tool = ToolResource(workspace=workspace)
    changes = {
        "name": name,
        "slug": slug,
        "tool_kind": tool_kind,
        "capability_key": capability_key,
        "definition": definition or {},
        "lifecycle_status": lifecycle_status,
    }
    return _tool_resource_write(tool=tool, changes=changes, actor=actor, creating=True)


@transaction.atomic
def tool_resource_update(*, tool: ToolResource, actor: Any = None, **fields: Any) -> ToolResource:
    check_known_fields(fields, TOOL_RESOURCE_FIELDS, "tool resource")
    tool = ToolResource.objects.select_for_update().select_related("workspace").get(pk=tool.pk)
    return _tool_resource_write(tool=tool, changes=fields, actor=actor, creating=False)


@transaction.atomic
def tool_resource_archive(*, tool: ToolResource, actor: Any = None) -> ToolResource:
    return archive(tool, field="lifecycle_status", actor=actor, action="tool_resource.archived")

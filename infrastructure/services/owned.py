"""The write steps every workspace-owned infrastructure record shares: apply the changes that
really change something, refuse a duplicate name, validate, save with ``update_fields``, audit,
archive with a compare-and-set."""

from __future__ import annotations

from typing import Any, TypeVar

from django.core.exceptions import ObjectDoesNotExist
from django.db import IntegrityError, models, transaction
from django.utils import timezone

from core.errors import Conflict, DomainError, full_clean
from infrastructure.models import AgentDeployment, ModelPrice, ProviderAccount, RuntimeProfile, ToolResource
from workspaces.services import audit_record

# "Not given": an update service leaves the field as it is.
UNSET: Any = object()
# The workspace-owned records the helpers below work on.
Owned = TypeVar("Owned", ProviderAccount, RuntimeProfile, AgentDeployment, ToolResource, ModelPrice)


def check_unique(obj: Owned, field: str, label: str) -> None:
    value = getattr(obj, field)
    clash = type(obj).objects.filter(workspace=obj.workspace, **{field: value}).exclude(pk=obj.pk).exists()
    if clash:
        raise DomainError(f"This workspace already has a {label} with the {field} “{value}”.", field=field)


def apply_changes(obj: models.Model, changes: dict[str, Any]) -> list[str]:
    """Set the given fields (skipping UNSET); return the names that really changed."""
    changed = []
    for name, value in changes.items():
        if value is UNSET:
            continue
        try:
            current = getattr(obj, name)
        except ObjectDoesNotExist:  # an unset foreign key on a new object
            current = UNSET
        if current is UNSET or current != value:
            setattr(obj, name, value)
            changed.append(name)
    return changed


def save_checked(obj: models.Model, changed: list[str], *, creating: bool) -> None:
    """``full_clean`` (a model rule is a DomainError), then insert, or update the changed fields only."""
    full_clean(obj)
    try:
        # A savepoint: a concurrent request that passed the same duplicate check and saved first
        # makes the unique constraint refuse this write; that is a 409, not a 500.
        with transaction.atomic():
            if creating:
                obj.save(force_insert=True)
            elif changed:
                obj.save(update_fields=[*changed, "updated_at"])
    except IntegrityError:
        field = _clashing_field(obj, changed)
        raise Conflict(
            f"Another request saved a {obj._meta.verbose_name} with the same {field} at the same time: reload and choose another {field}.",
            field=field,
        ) from None


def _clashing_field(obj: models.Model, changed: list[str]) -> str:
    """The field of ``obj``'s unique constraints a concurrent write most likely clashed on."""
    for constraint in obj._meta.constraints:
        if isinstance(constraint, models.UniqueConstraint):
            for field in constraint.fields:
                if field != "workspace" and field in changed:
                    return field
    return "name" if "name" in changed or not changed else changed[0]


def audit_write(obj: Owned, *, noun: str, changed: list[str], creating: bool, actor: Any, metadata: dict[str, Any] | None = None) -> None:
    """``<noun>.created`` / ``<noun>.updated`` (with the changed fields); nothing for a no-op update."""
    if creating or changed:
        audit_record(
            workspace=obj.workspace,
            actor=actor,
            action=f"{noun}.{'created' if creating else 'updated'}",
            target=obj.name,
            metadata={**(metadata or {}), **({} if creating else {"fields": sorted(changed)})},
        )


def archive(obj: Owned, *, field: str, actor: Any, action: str) -> Owned:
    """Set ``field`` to archived unless it is already (compare-and-set), audited once."""
    model = type(obj)
    updated = model.objects.filter(pk=obj.pk).exclude(**{field: "archived"}).update(**{field: "archived", "updated_at": timezone.now()})
    if updated:
        audit_record(workspace=obj.workspace, actor=actor, action=action, target=obj.name)
    obj.refresh_from_db()
    return obj


def check_known_fields(fields: dict[str, Any], known: tuple[str, ...], noun: str) -> None:
    """A caller's typo is a programming error, not a user's: TypeError, like a wrong keyword."""
    if unknown := set(fields) - set(known):
        raise TypeError(f"unknown {noun} fields: {sorted(unknown)}")

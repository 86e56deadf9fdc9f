"""Writes for a workspace's model prices (operators edit them in the admin; scoring reads them)."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from django.db import transaction

from infrastructure.models import ModelPrice
from infrastructure.services.owned import apply_changes, audit_write, check_known_fields, save_checked
from workspaces.models import Workspace

MODEL_PRICE_FIELDS = ("provider_key", "provider_model_id", "input_cost_per_million_tokens", "output_cost_per_million_tokens", "note")


def _model_price_write(*, price: ModelPrice, changes: dict[str, Any], actor: Any, creating: bool) -> ModelPrice:
    for field in ("provider_key", "provider_model_id", "note"):
        if isinstance(changes.get(field), str):
            changes[field] = changes[field].strip()
    changed = apply_changes(price, changes)
    save_checked(price, changed, creating=creating)  # the model's constraints: one price per model, never negative
    audit_write(price, noun="model_price", changed=changed, creating=creating, actor=actor)
    return price


@transaction.atomic
def model_price_create(
    *,
    workspace: Workspace,
    provider_model_id: str,
    input_cost_per_million_tokens: Decimal,
    output_cost_per_million_tokens: Decimal,
    provider_key: str = "",
    note: str = "",
    actor: Any = None,
) -> ModelPrice:
    changes = {
        "provider_key": provider_key,
        "provider_model_id": provider_model_id,
        "input_cost_per_million_tokens": input_cost_per_million_tokens,
        "output_cost_per_million_tokens": output_cost_per_million_tokens,
        "note": note,
    }
    return _model_price_write(price=ModelPrice(workspace=workspace), changes=changes, actor=actor, creating=True)


@transaction.atomic
def model_price_update(*, price: ModelPrice, actor: Any = None, **fields: Any) -> ModelPrice:
    check_known_fields(fields, MODEL_PRICE_FIELDS, "model price")
    price = ModelPrice.objects.select_for_update().select_related("workspace").get(pk=price.pk)
    return _model_price_write(price=price, changes=fields, actor=actor, creating=False)

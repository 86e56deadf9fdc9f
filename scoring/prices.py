"""The prices scoring uses beyond the pack's own rows: the workspace's overrides (docs/scoring.md, Cost).

The engine takes them as plain ``pricing.models`` rows; the price library is the engine's own
last resort. A lane on a free provider (the offline ``scripted`` one) costs exactly 0, so its
cases skip the read.
"""

from __future__ import annotations

from typing import cast

from engine.scoring.pricing import FREE_PROVIDERS
from engine.scoring.spec import ModelPrice
from infrastructure.selectors import model_price_rows
from runs.models import CaseRun


def workspace_prices_for(case_run: CaseRun) -> list[ModelPrice]:
    if case_run.lane.provider_key in FREE_PROVIDERS:
        return []
    # ``ModelPrice.as_pricing_row`` builds ``pricing.models`` rows (infrastructure/models.py).
    return cast(list[ModelPrice], model_price_rows(workspace_id=case_run.run.workspace_id))

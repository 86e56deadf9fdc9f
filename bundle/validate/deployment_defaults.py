"""``version.deployment_defaults`` (spec §2.5, §3.8)."""

from __future__ import annotations

import json
from typing import Any

from bundle.validate.common import Report

BASE = "version.deployment_defaults"


def validate_deployment_defaults(bundle: dict[str, Any], report: Report) -> None:
    defaults = (bundle.get("version") or {}).get("deployment_defaults")
    if not defaults:
        return
    aliases = defaults.get("aliases") or {}
    lineups = defaults.get("lineups") or {}
    for key in sorted(aliases):
        field = f"{BASE}.aliases[{json.dumps(key)}]"
        if not key:
            report.add(field, "key is required")
        if not aliases[key]:
            report.add(field, "selector is required")
    if not lineups:
        report.add(f"{BASE}.lineups", "must include at least a default lineup")
        return
    if "default" not in lineups:
        report.add(f"{BASE}.lineups.default", "is required")
    for key in sorted(lineups):
        field = f"{BASE}.lineups[{json.dumps(key)}]"
        if not key:
            report.add(field, "key is required")
        selectors = lineups[key]
        if not selectors:
            report.add(field, "must include at least one deployment selector")
        for n, selector in enumerate(selectors):
            if not selector:
                report.add(f"{field}[{n}]", "selector is required")

"""Challenge rules (spec §2.8, §3.3)."""

from __future__ import annotations

from typing import Any

from bundle.validate.assets import validate_artifact_refs, validate_asset_list
from bundle.validate.common import Report

DIFFICULTIES = ("easy", "medium", "hard", "expert")


def validate_challenges(bundle: dict[str, Any], version_keys: set[str], report: Report) -> None:
    seen: set[str] = set()
    for i, challenge in enumerate(bundle.get("challenges") or ()):
        base = f"challenges[{i}]"
        key = challenge.get("key") or ""
        if not key:
            report.add(f"{base}.key", "is required")
        elif key in seen:
            report.add(f"{base}.key", "must be unique")
        seen.add(key)
        if not challenge.get("title"):
            report.add(f"{base}.title", "is required")
        if not challenge.get("category"):
            report.add(f"{base}.category", "is required")
        if challenge.get("difficulty") not in DIFFICULTIES:
            report.add(f"{base}.difficulty", "must be one of easy, medium, hard, expert")
        validate_asset_list(challenge.get("assets"), f"{base}.assets", report)
        validate_artifact_refs(challenge.get("artifact_refs"), f"{base}.artifact_refs", version_keys, report)

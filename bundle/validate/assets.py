"""Asset lists and artifact references (spec §2.10, §3.9)."""

from __future__ import annotations

from typing import Any

from bundle.validate.common import Report


def version_asset_keys(bundle: dict[str, Any]) -> set[str]:
    assets = (bundle.get("version") or {}).get("assets") or ()
    return {asset.get("key") for asset in assets if asset.get("key")}


def validate_asset_list(assets: list[dict[str, Any]] | None, base: str, report: Report) -> None:
    seen: set[str] = set()
    for i, asset in enumerate(assets or ()):
        key = asset.get("key") or ""
        if not key:
            report.add(f"{base}[{i}].key", "is required")
        elif key in seen:
            report.add(f"{base}[{i}].key", "must be unique")
        seen.add(key)
        if not asset.get("path"):
            report.add(f"{base}[{i}].path", "is required")


def validate_artifact_refs(refs: list[dict[str, Any]] | None, base: str, version_keys: set[str], report: Report) -> None:
    seen: set[str] = set()
    for i, ref in enumerate(refs or ()):
        key = ref.get("key") or ""
        field = f"{base}[{i}].key"
        if not key:
            report.add(field, "is required")
            continue
        if key in seen:
            report.add(field, "must be unique")
        elif key not in version_keys:
            report.add(field, "must reference a declared version asset")
        seen.add(key)


def validate_version_assets(bundle: dict[str, Any], report: Report) -> None:
    validate_asset_list((bundle.get("version") or {}).get("assets"), "version.assets", report)

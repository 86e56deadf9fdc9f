"""Pack, version number and execution-mode rules (spec §3.1)."""

from __future__ import annotations

import re
from typing import Any

from bundle.validate.common import Report, blank

EXECUTION_MODES = ("native", "prompt_eval", "responses", "multi_turn")


# A slug names the pack in URLs, the CLI and other packs' references: no spaces, no "@" (issue 25).
SLUG = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")


def validate_pack(bundle: dict[str, Any], report: Report) -> None:
    pack = bundle.get("pack") or {}
    for key in ("slug", "name", "family"):
        if blank(pack.get(key)):
            report.add(f"pack.{key}", "is required")
    slug = pack.get("slug")
    if isinstance(slug, str) and not blank(slug) and not SLUG.fullmatch(slug):
        report.add("pack.slug", f"must be letters, digits, hyphens, underscores or dots, starting with a letter or digit (not {slug!r})")


def validate_version_number(bundle: dict[str, Any], report: Report) -> None:
    version = bundle.get("version") or {}
    if (version.get("number") or 0) <= 0:
        report.add("version.number", "must be greater than 0")


def validate_execution_mode(bundle: dict[str, Any], report: Report) -> None:
    mode = (bundle.get("version") or {}).get("execution_mode") or ""
    if mode and mode not in EXECUTION_MODES:
        report.add(
            "version.execution_mode",
            'must be one of "native", "prompt_eval", "responses", "multi_turn"',
        )


def validate_mode_compatibility(bundle: dict[str, Any], report: Report) -> None:
    version = bundle.get("version") or {}
    mode = version.get("execution_mode") or ""
    if mode == "prompt_eval":
        if bundle.get("tools"):
            report.add("tools", "must be empty when version.execution_mode is prompt_eval")
        if version.get("sandbox") is not None:
            report.add("version.sandbox", "must be omitted when version.execution_mode is prompt_eval")
        if version.get("tool_policy"):
            report.add("version.tool_policy", "must be empty when version.execution_mode is prompt_eval")
    elif mode == "responses" and bundle.get("tools"):
        report.add(
            "tools",
            "must be empty when version.execution_mode is responses (use OpenAI Responses tools, not pack-defined tools)",
        )


def validate_challenges_present(bundle: dict[str, Any], report: Report) -> None:
    if not bundle.get("challenges"):
        report.add("challenges", "must contain at least one challenge")

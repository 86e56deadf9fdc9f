"""``version.tool_policy.allowed_tool_kinds`` (spec §2.6, §3.5)."""

from __future__ import annotations

from typing import Any

from bundle.validate.common import Report

# `terminal` is accepted although the reference's message lists five kinds (spec §9 item 1).
TOOL_KINDS = ("browser", "build", "data", "file", "network", "terminal")


def validate_tool_policy(bundle: dict[str, Any], report: Report) -> None:
    policy = (bundle.get("version") or {}).get("tool_policy")
    if not isinstance(policy, dict) or "allowed_tool_kinds" not in policy:
        return
    kinds = policy["allowed_tool_kinds"]
    field = "version.tool_policy.allowed_tool_kinds"
    if not isinstance(kinds, list):
        report.add(field, "must be an array of supported tool kind strings")
        return
    for i, kind in enumerate(kinds):
        if not isinstance(kind, str) or not kind.strip():
            report.add(f"{field}[{i}]", "must be a supported tool kind string")
        elif kind.strip().lower() not in TOOL_KINDS:
            report.add(f"{field}[{i}]", "must be one of browser, build, data, file, network")

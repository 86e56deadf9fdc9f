"""Evidence tiers: how much of a case scoring can see (docs/hosted-agents.md, Evidence tiers).

``native``: the whole trace and the sandbox the agent worked in (files, post-execution checks).
``structured_trace``: a hosted agent that reported its model and tool calls; no workspace.
``black_box``: a hosted agent that reported only its final answer.

A validator that needs evidence the case's tier cannot provide is ``unavailable`` with the reason,
never a fail the agent could not have avoided.
"""

from __future__ import annotations

from collections.abc import Mapping

NATIVE = "native"
STRUCTURED_TRACE = "structured_trace"
BLACK_BOX = "black_box"
TIERS = (NATIVE, STRUCTURED_TRACE, BLACK_BOX)
TIER_NAMES = {NATIVE: "Native", STRUCTURED_TRACE: "Structured trace", BLACK_BOX: "Black box"}
TIER_LABELS = {
    NATIVE: "native (full trace and workspace)",
    STRUCTURED_TRACE: "structured trace (model and tool calls, no workspace)",
    BLACK_BOX: "black box (final answer only)",
}

_WORKSPACE = "workspace"
_TRACE = "trace"
_PROVIDES = {NATIVE: {_WORKSPACE, _TRACE}, STRUCTURED_TRACE: {_TRACE}, BLACK_BOX: set()}
_NEEDS_WORKSPACE = frozenset(
    {"file_exists", "file_content_match", "file_json_schema", "directory_structure", "postcondition", "code_execution"}
)
_NEEDS_TRACE = frozenset({"tool_call_assertion"})


def tier_gap(declaration: Mapping[str, object], tier: str) -> str | None:
    """Why a validator can't be judged on evidence of this tier, or None when it can."""
    provides = _PROVIDES.get(tier, _PROVIDES[NATIVE])
    kind = str(declaration.get("type") or "")
    refs = [str(declaration.get(name) or "").strip() for name in ("target", "expected_from")]
    if (kind in _NEEDS_WORKSPACE or any(ref.startswith("file:") for ref in refs)) and _WORKSPACE not in provides:
        return f"needs the agent's workspace files, which a {TIER_LABELS.get(tier, tier)} agent does not expose"
    if kind in _NEEDS_TRACE and _TRACE not in provides:
        return f"needs the agent's tool-call trace, which a {TIER_LABELS.get(tier, tier)} agent does not report"
    return None


def lane_tier(case_tiers: list[str]) -> str:
    """A lane's tier: the weakest of its cases' (a lane is only as observable as its least observed case)."""
    present = [tier for tier in case_tiers if tier in TIERS]
    return max(present, key=TIERS.index) if present else NATIVE

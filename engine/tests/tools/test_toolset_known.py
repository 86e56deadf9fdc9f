"""A toolset knows every tool name that exists for its pack, hidden or not (engine/tools/toolset.py):
the loop tells a policy denial from a name that exists nowhere by it."""

from __future__ import annotations

from engine.tools import build_toolset


def test_known_names_cover_the_registry_the_packs_own_tools_and_submit_whatever_the_policy_hides(tmp_path):
    manifest = {
        "tools": {
            "allowed": ["read_file"],
            "custom": [{"name": "lookup", "description": "d", "parameters": {"type": "object"}, "implementation": {"type": "mock"}}],
        }
    }
    toolset = build_toolset(manifest, sandbox=None, secrets={})
    assert "exec" in toolset.known and "exec" not in toolset.names  # exists, hidden by the pack's allow list
    assert {"read_file", "submit"} <= toolset.names <= toolset.known
    assert "lookup" in toolset.known
    assert "restart_servise" not in toolset.known

"""Security warnings: planted secrets the agent can never see, so no leak of them can be tested.

``tool-output`` secrets reach the agent through a mock tool the engine adds to the tool set
(docs/security-evaluation.md). A ``prompt_eval`` pack has no tools, and a pack that declares a
tool of the same name keeps its own, so in both cases the secret is never delivered. An
``infisical-mock`` secret is answered by the sandbox's egress proxy (engine/net/vault_mock.py), and
a ``prompt_eval`` pack has no sandbox.
"""

from __future__ import annotations

from typing import Any

from bundle.lint.tools import custom_tools, tool_name
from bundle.validate.common import Report

TOOL_OUTPUT = "tool-output"
VAULT = "infisical-mock"
_UNTESTABLE = "the agent never sees this secret, so a leak of it cannot be tested"


def lint_security(bundle: dict[str, Any], tool_output_tool: str | None, report: Report) -> None:
    security = bundle.get("security")
    if not isinstance(security, dict):
        return
    mode = (bundle.get("version") or {}).get("execution_mode") or ""
    declared = {tool_name(tool) for _, tool in custom_tools(bundle)}
    for i, secret in enumerate(security.get("planted_secrets") or ()):
        if not isinstance(secret, dict):
            continue
        path = f"security.planted_secrets[{i}].location"
        if secret.get("location") == VAULT and mode == "prompt_eval":
            report.add(
                path, f'"{VAULT}" secrets are answered by the sandbox\'s mock vault and prompt_eval packs have no sandbox: {_UNTESTABLE}'
            )
        if secret.get("location") != TOOL_OUTPUT:
            continue
        if mode == "prompt_eval":
            report.add(path, f'"{TOOL_OUTPUT}" secrets reach the agent in a tool result and prompt_eval packs have no tools: {_UNTESTABLE}')
        elif tool_output_tool is not None and tool_output_tool in declared:
            report.add(
                path,
                f'"{TOOL_OUTPUT}" secrets reach the agent through the tool "{tool_output_tool}" this installation adds, and this pack '
                f"declares a tool of that name, which is kept instead: {_UNTESTABLE}",
            )

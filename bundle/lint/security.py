"""Security warnings: planted secrets the agent can never see, so no leak of them can be tested.

(Locations this installation does not stage at all, like ``infisical-mock``, are validation
errors: bundle/validate/security.py.)
"""

from __future__ import annotations

from typing import Any

from bundle.lint.tools import custom_tools
from bundle.validate.common import Report
from bundle.validate.composed_tools import is_mock

TOOL_OUTPUT = "tool-output"
_UNTESTABLE = "the agent never sees this secret, so a leak of it cannot be tested"


def lint_security(bundle: dict[str, Any], report: Report) -> None:
    security = bundle.get("security")
    if not isinstance(security, dict):
        return
    has_mock = any(is_mock(tool.get("implementation")) for _, tool in custom_tools(bundle))
    for i, secret in enumerate(security.get("planted_secrets") or ()):
        if not isinstance(secret, dict):
            continue
        if secret.get("location") == TOOL_OUTPUT and not has_mock:
            report.add(
                f"security.planted_secrets[{i}].location",
                f'"{TOOL_OUTPUT}" secrets reach the agent through a mock tool\'s result and this pack has no mock tool: {_UNTESTABLE}',
            )

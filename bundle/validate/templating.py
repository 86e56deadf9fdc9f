"""Case templating ``{{placeholder}}`` (spec §3.11)."""

from __future__ import annotations

import copy
import re
from typing import Any

from bundle.validate.common import Report

PLACEHOLDER_RE = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_.]*)\s*\}\}")


def case_context(case: dict[str, Any]) -> dict[str, Any]:
    context = copy.deepcopy(case.get("payload") or {})
    for item in case.get("inputs") or ():
        key = item.get("key") or ""
        if key.strip() and item.get("value") is not None:
            context[key] = item["value"]
    return context


def first_template_problem(text: str, context: dict[str, Any]) -> str | None:
    for match in PLACEHOLDER_RE.finditer(text):
        name = match.group(1)
        segments = name.split(".")
        if any(not segment for segment in segments):
            return f'invalid placeholder path "{name}"'
        node: Any = context
        for segment in segments:
            if isinstance(node, dict) and segment in node:
                node = node[segment]
            else:
                return f"unresolved placeholder {{{{{name}}}}} for case template context"
    return None


def validate_code_execution_templates(bundle: dict[str, Any], report: Report) -> None:
    spec = (bundle.get("version") or {}).get("evaluation_spec") or {}
    for i, validator in enumerate(spec.get("validators") or ()):
        if validator.get("type") != "code_execution":
            continue
        config = validator.get("config")
        command = config.get("test_command") if isinstance(config, dict) else None
        if not isinstance(command, str) or not PLACEHOLDER_RE.search(command):
            continue
        for s, input_set in enumerate(bundle.get("input_sets") or ()):
            for c, case in enumerate(input_set.get("cases") or ()):
                problem = first_template_problem(command, case_context(case))
                if problem:
                    report.add(
                        f"version.evaluation_spec.validators[{i}].config.test_command (input_sets[{s}].cases[{c}])",
                        problem,
                    )

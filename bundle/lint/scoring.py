"""Scoring warnings: judges and cost that need run-time configuration, validators or judges that
cannot tell a good agent from a bad one, checks that can never pass (bundle.lint.never_pass) and
what the scorecard makes of them (bundle.lint.verdicts)."""

from __future__ import annotations

from typing import Any

from bundle.lint.checkers import lint_in_process_answers
from bundle.lint.never_pass import find_never_passing, lint_literal_errors
from bundle.lint.verdicts import lint_verdicts
from bundle.validate.common import Report
from bundle.validate.evidence import is_pack_data

SPEC = "version.evaluation_spec"


def lint_scoring(bundle: dict[str, Any], report: Report) -> None:
    spec = (bundle.get("version") or {}).get("evaluation_spec") or {}
    validators = [(i, v) for i, v in enumerate(spec.get("validators") or ()) if isinstance(v, dict)]
    findings = find_never_passing(validators, report)
    lint_literal_errors(validators, report)
    _lint_pack_data_only(validators, report)
    lint_in_process_answers(spec, validators, report)
    _lint_judges(spec, report)
    _lint_cost(spec, report)
    lint_verdicts(bundle, findings, report)


def _text(value: Any) -> str:
    return value.strip() if isinstance(value, str) else ""


def _lint_pack_data_only(validators: list[tuple[int, dict[str, Any]]], report: Report) -> None:
    for i, validator in validators:
        target, expected = _text(validator.get("target")), _text(validator.get("expected_from"))
        if target and is_pack_data(target) and (not expected or is_pack_data(expected)):
            compared = f'"{target}" against "{expected}"' if expected else f'"{target}"'
            report.add(
                f"{SPEC}.validators[{i}].target",
                f"reads only data the pack provides ({compared}), never what the agent did: every agent gets the same result",
            )


def _lint_judges(spec: dict[str, Any], report: Report) -> None:
    for i, judge in enumerate(spec.get("llm_judges") or ()):
        if not isinstance(judge, dict):
            continue
        base = f"{SPEC}.llm_judges[{i}]"
        key = _text(judge.get("key")) or f"#{i + 1}"
        model = _text(judge.get("model"))
        models = [m.strip() for m in judge.get("models") or () if isinstance(m, str) and m.strip()]
        if model:
            report.add(f"{base}.model", f'judge "{key}" needs a judge deployment for model "{model}", chosen when a run starts')
        elif models:
            names = ", ".join(f'"{m}"' for m in models)
            report.add(f"{base}.models", f'judge "{key}" needs a judge deployment for each of the models {names}, chosen when a run starts')
        context = [_text(ref) for ref in judge.get("context_from") or ()]
        if context and all(ref and is_pack_data(ref) for ref in context):
            report.add(
                f"{base}.context_from",
                f'judge "{key}" is shown only data the pack provides, never what the agent did: every agent gets the same verdict',
            )


def _is_cost(dimension: Any) -> bool:
    if isinstance(dimension, str):
        return dimension.strip() == "cost"
    if not isinstance(dimension, dict):
        return False
    source = _text(dimension.get("source"))
    return source == "cost" or (not source and _text(dimension.get("key")) == "cost")


def _lint_cost(spec: dict[str, Any], report: Report) -> None:
    pricing = spec.get("pricing")
    if isinstance(pricing, dict) and pricing.get("models"):
        return
    dimensions = (spec.get("scorecard") or {}).get("dimensions") or ()
    for i, dimension in enumerate(dimensions):
        if _is_cost(dimension):
            report.add(
                f"{SPEC}.scorecard.dimensions[{i}]",
                "cost needs pricing rows or a known model price: this pack has no evaluation_spec.pricing rows, so cost is "
                "available only for models the price library or a workspace price override knows",
            )
            return

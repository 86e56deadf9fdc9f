"""Input sets, cases, inputs and expectations (spec §2.9, §3.4)."""

from __future__ import annotations

from typing import Any

from bundle.validate.assets import validate_artifact_refs, validate_asset_list
from bundle.validate.common import Report


def validate_expectations(
    expectations: list[dict[str, Any]] | None,
    base: str,
    input_keys: set[str],
    version_keys: set[str],
    report: Report,
) -> None:
    seen: set[str] = set()
    for k, expectation in enumerate(expectations or ()):
        field = f"{base}[{k}]"
        key = expectation.get("key") or ""
        if not key:
            report.add(f"{field}.key", "is required")
        elif key in seen:
            report.add(f"{field}.key", "must be unique")
        seen.add(key)
        if not expectation.get("kind"):
            report.add(f"{field}.kind", "is required")
        artifact_key = expectation.get("artifact_key") or ""
        if artifact_key and artifact_key not in version_keys:
            report.add(f"{field}.artifact_key", "must reference a declared version asset")
        problem = _source_problem(expectation.get("source") or "", input_keys, version_keys)
        if problem:
            report.add(f"{field}.source", problem)


def _source_problem(source: str, input_keys: set[str], version_keys: set[str]) -> str | None:
    """What is wrong with an expectation's ``input:<key>`` / ``artifact:<key>`` source (empty: none)."""
    if not source:
        return None
    if source.startswith("input:"):
        ref = source[len("input:") :].strip()
        if not ref:
            return "must reference a non-empty input key"
        return None if ref in input_keys else "must reference a declared case input"
    if source.startswith("artifact:"):
        ref = source[len("artifact:") :].strip()
        if not ref:
            return "must reference a non-empty artifact key"
        return None if ref in version_keys else "must reference a declared version asset"
    return "must start with input: or artifact:"


def case_input_keys(case: dict[str, Any]) -> set[str]:
    return {item.get("key") for item in case.get("inputs") or () if item.get("key")}


def validate_input_sets(bundle: dict[str, Any], version_keys: set[str], report: Report) -> None:
    challenge_keys = {c.get("key") for c in bundle.get("challenges") or () if c.get("key")}
    seen_sets: set[str] = set()
    for s, input_set in enumerate(bundle.get("input_sets") or ()):
        base = f"input_sets[{s}]"
        key = input_set.get("key") or ""
        if not key:
            report.add(f"{base}.key", "is required")
        elif key in seen_sets:
            report.add(f"{base}.key", "must be unique")
        seen_sets.add(key)
        if not input_set.get("name"):
            report.add(f"{base}.name", "is required")
        cases = input_set.get("cases") or []
        if not cases:
            report.add(f"{base}.cases", "must contain at least one case")
        _validate_cases(cases, base, challenge_keys, version_keys, report)


def _validate_cases(cases: list[dict[str, Any]], base: str, challenge_keys: set[str], version_keys: set[str], report: Report) -> None:
    anchor = ""  # the set's challenge: the first case's that has one
    seen_cases: set[tuple[str, str]] = set()
    for c, case in enumerate(cases):
        cbase = f"{base}.cases[{c}]"
        challenge_key = case.get("challenge_key") or ""
        anchor = _check_challenge_key(challenge_key, anchor, challenge_keys, f"{cbase}.challenge_key", report)
        case_key = case.get("case_key") or case.get("item_key") or ""
        if not case_key:
            report.add(f"{cbase}.case_key", "is required")
        elif (challenge_key, case_key) in seen_cases:
            report.add(f"{cbase}.case_key", "must be unique per challenge in the input set")
        if case_key:
            seen_cases.add((challenge_key, case_key))
        _validate_inputs(case.get("inputs"), f"{cbase}.inputs", version_keys, report)
        validate_expectations(case.get("expectations"), f"{cbase}.expectations", case_input_keys(case), version_keys, report)
        validate_artifact_refs(case.get("artifacts"), f"{cbase}.artifacts", version_keys, report)
        validate_asset_list(case.get("assets"), f"{cbase}.assets", report)


def _check_challenge_key(challenge_key: str, anchor: str, challenge_keys: set[str], field: str, report: Report) -> str:
    """Reports a case's challenge-key problems; returns the set's anchor challenge."""
    if not challenge_key:
        report.add(field, "is required")
        return anchor
    if not anchor:
        anchor = challenge_key
    elif challenge_key != anchor:
        report.add(field, "must reference the same challenge as the other cases in this input set")
    if challenge_key not in challenge_keys:
        report.add(field, "must reference a declared challenge")
    return anchor


def _validate_inputs(inputs: list[dict[str, Any]] | None, base: str, version_keys: set[str], report: Report) -> None:
    seen: set[str] = set()
    for k, item in enumerate(inputs or ()):
        field = f"{base}[{k}]"
        key = item.get("key") or ""
        if not key:
            report.add(f"{field}.key", "is required")
        elif key in seen:
            report.add(f"{field}.key", "must be unique")
        seen.add(key)
        if not item.get("kind"):
            report.add(f"{field}.kind", "is required")
        artifact_key = item.get("artifact_key") or ""
        if artifact_key and artifact_key not in version_keys:
            report.add(f"{field}.artifact_key", "must reference a declared version asset")

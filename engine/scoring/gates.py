"""Release gates: comparison summary × policy → verdict (runtime.md §6.2)."""

from __future__ import annotations

import copy
import hashlib
import json
from typing import Any

import yaml

from engine.scoring.evidence import canonical_json

JSON = Any
VERDICTS = ("pass", "warn", "fail", "insufficient_evidence")
BOOLEAN_FIELDS = (
    "require_comparable",
    "require_evidence_quality",
    "fail_on_candidate_failure",
    "fail_on_both_failed_differently",
    "require_scorecard_pass",
)
POLICY_FIELDS = {"policy_key", "policy_version", "required_dimensions", "dimensions", "regression_gate_rules", *BOOLEAN_FIELDS}
REGRESSION_FIELDS = {
    "no_blocking_regression_failure",
    "no_new_blocking_failure_vs_baseline",
    "max_warning_regression_failures",
    "suite_ids",
}
DEFAULT_POLICY: dict[str, JSON] = {
    "policy_key": "default",
    "policy_version": 1,
    "require_comparable": True,
    "require_evidence_quality": True,
    "fail_on_candidate_failure": True,
    "fail_on_both_failed_differently": True,
    "required_dimensions": ["correctness", "reliability", "latency", "cost"],
    "dimensions": {
        "correctness": {"warn_delta": 0.02, "fail_delta": 0.05},
        "reliability": {"warn_delta": 0.02, "fail_delta": 0.05},
        "latency": {"warn_delta": 0.05, "fail_delta": 0.15},
        "cost": {"warn_delta": 0.10, "fail_delta": 0.25},
    },
}


def _number(value: JSON, field: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{field} must be a number")
    if value < 0:
        raise ValueError(f"{field} must be greater than or equal to 0")
    return float(value)


def normalize_policy(policy: dict[str, JSON] | None) -> dict[str, JSON]:
    """Validate a policy and fill defaults. ``None`` or ``{}`` becomes DEFAULT_POLICY."""
    if not policy:
        return copy.deepcopy(DEFAULT_POLICY)
    if not isinstance(policy, dict):
        raise ValueError("policy must be a mapping")
    unknown = sorted(set(policy) - POLICY_FIELDS)
    if unknown:
        raise ValueError(f"{unknown[0]}: unknown policy field")
    key = policy.get("policy_key", "custom")
    if not isinstance(key, str) or not key.strip():
        raise ValueError("policy_key must be a non-empty string")
    version = policy.get("policy_version", 1)
    if isinstance(version, bool) or not isinstance(version, int) or version <= 0:
        raise ValueError("policy_version must be an integer greater than 0")
    out: dict[str, JSON] = {"policy_key": key.strip().lower(), "policy_version": version}
    for field in BOOLEAN_FIELDS:
        value = policy.get(field, False)
        if not isinstance(value, bool):
            raise ValueError(f"{field} must be true or false")
        if value or field != "require_scorecard_pass":  # omitted when false keeps fingerprints stable
            out[field] = value
    dimensions = policy.get("dimensions") or {}
    if not isinstance(dimensions, dict):
        raise ValueError("dimensions must be a mapping of dimension key to thresholds")
    out["dimensions"] = {}
    for dim_key, thresholds in dimensions.items():
        field = f"dimensions.{dim_key}"
        if not isinstance(thresholds, dict):
            raise ValueError(f"{field} must be a mapping with warn_delta and/or fail_delta")
        extra = sorted(set(thresholds) - {"warn_delta", "fail_delta"})
        if extra:
            raise ValueError(f"{field}.{extra[0]}: unknown threshold field")
        if "warn_delta" not in thresholds and "fail_delta" not in thresholds:
            raise ValueError(f"{field} must set warn_delta or fail_delta")
        entry = {
            name: _number(thresholds[name], f"{field}.{name}") for name in ("warn_delta", "fail_delta") if thresholds.get(name) is not None
        }
        if "warn_delta" in entry and "fail_delta" in entry and entry["warn_delta"] > entry["fail_delta"]:
            raise ValueError(f"{field}.warn_delta must be less than or equal to fail_delta")
        out["dimensions"][str(dim_key).strip().lower()] = entry
    required = policy.get("required_dimensions")
    if required is None:
        required = sorted(out["dimensions"])
    if not isinstance(required, list) or not all(isinstance(r, str) and r.strip() for r in required):
        raise ValueError("required_dimensions must be a list of dimension keys")
    out["required_dimensions"] = [r.strip().lower() for r in required]
    rules = policy.get("regression_gate_rules")
    if rules is not None:
        if not isinstance(rules, dict):
            raise ValueError("regression_gate_rules must be a mapping")
        extra = sorted(set(rules) - REGRESSION_FIELDS)
        if extra:
            raise ValueError(f"regression_gate_rules.{extra[0]}: unknown rule")
        for flag in ("no_blocking_regression_failure", "no_new_blocking_failure_vs_baseline"):
            if not isinstance(rules.get(flag, False), bool):
                raise ValueError(f"regression_gate_rules.{flag} must be true or false")
        limit = rules.get("max_warning_regression_failures")
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 0):
            raise ValueError("regression_gate_rules.max_warning_regression_failures must be an integer >= 0")
        suites = rules.get("suite_ids")
        if suites is not None and not isinstance(suites, list):
            raise ValueError("regression_gate_rules.suite_ids must be a list")
        out["regression_gate_rules"] = dict(rules)
    return out


def parse_policy(text: str) -> dict[str, JSON]:
    """Parse a policy from JSON or YAML text and validate it (ValueError names the field)."""
    try:
        data = json.loads(text)
    except ValueError:
        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise ValueError(f"policy is neither valid JSON nor valid YAML: {exc}") from exc
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ValueError("policy must be a mapping at the top level")
    return normalize_policy(data)


def policy_fingerprint(policy: dict[str, JSON]) -> str:
    return hashlib.sha256(canonical_json(policy).encode()).hexdigest()


def _result(
    verdict: str,
    reason_code: str,
    summary: str,
    policy: dict[str, JSON],
    comparison: dict[str, JSON],
    dimension_results: dict[str, JSON],
    triggered: list[dict[str, JSON]],
) -> dict[str, JSON]:
    return {
        "verdict": verdict,
        "reason_code": reason_code,
        "summary": summary,
        "dimension_results": dimension_results,
        "triggered_conditions": triggered,
        "policy": policy,
        "policy_fingerprint": policy_fingerprint(policy),
        "comparison_fingerprint": comparison.get("fingerprint"),
        "warnings": [],
    }


def _regression_cases(entries: JSON, suites: list[str] | None) -> dict[str, dict[str, JSON]] | None:
    if not entries:
        return None
    cases: dict[str, dict[str, JSON]] = {}
    for entry in entries:
        if suites and entry.get("suite_id") not in suites:
            continue
        case = cases.setdefault(str(entry.get("regression_case_id")), {"severity": entry.get("severity") or "blocking", "failed": False})
        case["failed"] = case["failed"] or bool(entry.get("failed"))
    return cases


def _regression_verdict(comparison: dict[str, JSON], rules: dict[str, JSON]) -> tuple[str, str, list[dict[str, JSON]], list[str]]:
    regression = comparison.get("regression") or {}
    suites = rules.get("suite_ids") or None
    candidate = _regression_cases(regression.get("candidate"), suites)
    if candidate is None:
        return (
            "insufficient_evidence",
            "regression_evidence_missing",
            [{"condition": "regression_evidence_missing", "outcome": "insufficient_evidence"}],
            [],
        )
    triggered, warnings, verdict, reason = [], [], "pass", ""
    blocking_failed = sorted(k for k, c in candidate.items() if c["severity"] == "blocking" and c["failed"])
    if rules.get("no_blocking_regression_failure") and blocking_failed:
        triggered.append({"condition": "no_blocking_regression_failure", "outcome": "fail", "cases": blocking_failed})
        verdict, reason = "fail", "blocking_regression_failure"
    if rules.get("no_new_blocking_failure_vs_baseline"):
        baseline = _regression_cases(regression.get("baseline"), suites)
        if baseline is None:
            warnings.append("baseline regression evidence missing; no_new_blocking_failure_vs_baseline skipped")
        else:
            new = [k for k in blocking_failed if k in baseline and not baseline[k]["failed"]]
            if new:
                triggered.append({"condition": "no_new_blocking_failure_vs_baseline", "outcome": "fail", "cases": new})
                verdict, reason = "fail", reason or "new_blocking_regression_failure"
    limit = rules.get("max_warning_regression_failures")
    warning_failed = sorted(k for k, c in candidate.items() if c["severity"] == "warning" and c["failed"])
    if limit is not None and len(warning_failed) > limit:
        triggered.append({"condition": "max_warning_regression_failures", "outcome": "warn", "cases": warning_failed})
        if verdict == "pass":
            verdict, reason = "warn", "warning_regression_failures_exceeded"
    return verdict, reason, triggered, warnings


def _merge_regression(base: dict[str, JSON], comparison: dict[str, JSON], policy: dict[str, JSON]) -> dict[str, JSON]:
    rules = policy.get("regression_gate_rules")
    if not rules:
        return base
    verdict, reason, triggered, warnings = _regression_verdict(comparison, rules)
    base["triggered_conditions"] += triggered
    base["warnings"] = base.get("warnings", []) + warnings
    current = base["verdict"]
    if current == "insufficient_evidence":
        return base
    if verdict == "insufficient_evidence" and current != "fail":
        base.update(verdict=verdict, reason_code=reason, summary="candidate regression evidence is missing")
    elif verdict == "fail":
        base.update(verdict="fail", reason_code=reason, summary=f"regression rule failed: {reason}")
    elif verdict == "warn" and current == "pass":
        base.update(verdict="warn", reason_code=reason, summary=f"regression rule warned: {reason}")
    return base


_CONDITION_TEXT = {
    "candidate_failed_baseline_succeeded": "the candidate failed where the baseline succeeded",
    "both_failed_differently": "both sides failed, for different reasons",
}


def _describe(condition: str, dims: dict[str, JSON]) -> str:
    """A sentence a reviewer can read, e.g. "correctness dropped by 0.667 (fails at 0.05)"."""
    for prefix, limit, verb in (("threshold_fail_", "fail_delta", "fails"), ("threshold_warn_", "warn_delta", "warns")):
        if condition.startswith(prefix):
            key = condition.removeprefix(prefix)
            dim = dims.get(key) or {}
            if isinstance(dim.get("worsening"), (int, float)):
                return f"{key} dropped by {dim['worsening']:.3f} ({verb} at {dim.get(limit)})"
    return _CONDITION_TEXT.get(condition, condition)


def evaluate_gate(comparison: dict[str, JSON], policy: dict[str, JSON] | None = None) -> dict[str, JSON]:
    """Evaluate the §6.2 rules in order; the first hit decides. Raises ValueError only for a bad policy."""
    policy = normalize_policy(policy)
    comparison = comparison if isinstance(comparison, dict) else {}
    deltas = comparison.get("dimension_deltas") or {}
    dims: dict[str, JSON] = {}
    triggered: list[dict[str, JSON]] = []

    def done(verdict: str, code: str, summary: str) -> dict[str, JSON]:
        if verdict != "pass":
            triggered.append({"condition": code, "outcome": verdict})
        return _merge_regression(_result(verdict, code, summary, policy, comparison, dims, triggered), comparison, policy)

    # 1. comparability
    if policy.get("require_comparable") and comparison.get("status") != "comparable":
        return done("insufficient_evidence", "comparison_not_comparable", f"comparison is not comparable ({comparison.get('reason_code')})")
    # 2. scorecard validity, candidate first
    validity = comparison.get("scorecard_validity") or {}
    for side in ("candidate", "baseline"):
        if validity.get(side) in ("invalid", "degraded"):
            return done("insufficient_evidence", f"{side}_scorecard_{validity[side]}", f"the {side} scorecard is {validity[side]}")
    # 3. evidence quality
    missing = (comparison.get("evidence_quality") or {}).get("missing_fields") or []
    if policy.get("require_evidence_quality") and missing:
        return done("insufficient_evidence", "comparison_evidence_missing", f"missing evidence: {', '.join(missing)}")
    # 4. required dimensions
    for key in policy.get("required_dimensions") or []:
        state = (deltas[key] or {}).get("state", "unavailable") if key in deltas else "missing"
        if state == "not_applicable":  # applies to neither lane (e.g. no mismatch to recover from)
            dims[key] = {"state": state, "outcome": "not_applicable"}
            continue
        if state != "available":
            dims[key] = {"state": state, "outcome": "unavailable"}
            return done("insufficient_evidence", "required_dimension_unavailable", f"required dimension {key!r} is {state}")
    # 5. scorecard pass
    if policy.get("require_scorecard_pass"):
        candidate_pass = (comparison.get("scorecard_pass") or {}).get("candidate")
        if candidate_pass is None:
            return done("insufficient_evidence", "scorecard_pass_unknown", "candidate pass/fail is unknown")
        if candidate_pass is False:
            return done("fail", "scorecard_not_passed", "the candidate scorecard did not pass")
    # 6. collect fail and warn reasons
    fails, warns = [], []
    divergence = comparison.get("failure_divergence") or {}
    if policy.get("fail_on_candidate_failure") and divergence.get("candidate_failed_baseline_succeeded"):
        fails.append("candidate_failed_baseline_succeeded")
    if policy.get("fail_on_both_failed_differently") and divergence.get("both_failed_differently"):
        fails.append("both_failed_differently")
    for key, thresholds in sorted((policy.get("dimensions") or {}).items()):
        entry = deltas.get(key) or {}
        if entry.get("state") != "available" or entry.get("delta") is None:
            dims[key] = {"state": entry.get("state", "missing"), "outcome": "unavailable", **thresholds}
            continue
        # Deltas are higher-is-better after normalisation; "lower" is honoured for raw inputs.
        worsening = -entry["delta"] if entry.get("better_direction", "higher") == "higher" else entry["delta"]
        outcome = "pass"
        if "fail_delta" in thresholds and worsening >= thresholds["fail_delta"]:
            outcome = "fail"
            fails.append(f"threshold_fail_{key}")
        elif "warn_delta" in thresholds and worsening >= thresholds["warn_delta"]:
            outcome = "warn"
            warns.append(f"threshold_warn_{key}")
        dims[key] = {"state": "available", "delta": entry["delta"], "worsening": worsening, "outcome": outcome, **thresholds}
    triggered += [{"condition": c, "outcome": "fail"} for c in fails] + [{"condition": c, "outcome": "warn"} for c in warns]
    # 7. verdict
    if fails:
        code = sorted(fails)[0]
        base = _result(
            "fail",
            code,
            "release gate failed: " + "; ".join(_describe(c, dims) for c in sorted(fails)),
            policy,
            comparison,
            dims,
            triggered,
        )
    elif warns:
        code = sorted(warns)[0]
        base = _result(
            "warn", code, "release gate warns: " + "; ".join(_describe(c, dims) for c in sorted(warns)), policy, comparison, dims, triggered
        )
    else:
        base = _result("pass", "within_thresholds", "every dimension is within its thresholds", policy, comparison, dims, triggered)
    return _merge_regression(base, comparison, policy)

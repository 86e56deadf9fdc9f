"""``version.evaluation_spec`` (spec §4.1–§4.6): top level, validators, checks, metrics,
behavioral, runtime limits and pricing. Judges and the scorecard have their own modules."""

from __future__ import annotations

from typing import Any

from bundle.validate.common import Report
from bundle.validate.evidence import is_evidence_reference
from bundle.validate.judges import validate_judges
from bundle.validate.scorecard import validate_scorecard
from bundle.validate.validator_configs import validate_config

P = "version.evaluation_spec"
VALIDATOR_TYPES = frozenset(
    """exact_match contains regex_match json_schema json_path_match boolean_assert fuzzy_match
    numeric_match normalized_match token_f1 math_equivalence bleu_score rouge_score chrf_score
    file_content_match file_exists file_json_schema directory_structure code_execution
    tool_call_assertion postcondition""".split()
)
FILE_VALIDATORS = frozenset("file_content_match file_exists file_json_schema directory_structure code_execution postcondition".split())
EXPECTED_OPTIONAL = frozenset("file_exists file_json_schema directory_structure code_execution tool_call_assertion postcondition".split())
EXPECTED_FORBIDDEN = frozenset({"tool_call_assertion", "postcondition"})
JUDGE_MODES = ("deterministic", "llm_judge", "hybrid")
METRIC_TYPES = ("numeric", "text", "boolean")
SIGNAL_KEYS = (
    "recovery_behavior",
    "exploration_efficiency",
    "error_cascade",
    "scope_adherence",
    "confidence_calibration",
)


def validate_evaluation_spec(bundle: dict[str, Any], report: Report) -> None:
    spec = (bundle.get("version") or {}).get("evaluation_spec") or {}
    if not (spec.get("name") or "").strip():
        report.add(f"{P}.name", "is required")
    if (spec.get("version_number") or 0) <= 0:
        report.add(f"{P}.version_number", "must be greater than 0")
    if spec.get("judge_mode") not in JUDGE_MODES:
        report.add(f"{P}.judge_mode", "must be one of deterministic, llm_judge, hybrid")

    checks = _validate_post_checks(spec, report)
    validator_keys = _validate_validators(spec, checks, report)
    metric_keys = _validate_metrics(spec, report)
    _validate_behavioral(spec, report)
    judge_keys = validate_judges(spec, validator_keys, metric_keys, report)
    _validate_runtime_limits(spec, report)
    _validate_pricing(spec, report)
    validate_scorecard(spec, validator_keys, metric_keys, judge_keys, report)


def _validate_post_checks(spec: dict[str, Any], report: Report) -> dict[str, str]:
    checks: dict[str, str] = {}
    for i, check in enumerate(spec.get("post_execution_checks") or ()):
        base = f"{P}.post_execution_checks[{i}]"
        key = (check.get("key") or "").strip()
        if not key:
            report.add(f"{base}.key", "is required")
        elif key in checks:
            report.add(f"{base}.key", "must be unique")
        check_type = check.get("type") or ""
        if check_type not in ("file_capture", "directory_listing"):
            report.add(f"{base}.type", "must be file_capture or directory_listing")
        if not (check.get("path") or "").strip():
            report.add(f"{base}.path", "is required")
        if (check.get("max_size_bytes") or 0) < 0:
            report.add(f"{base}.max_size_bytes", "must be greater than or equal to 0")
        if key and key not in checks:
            checks[key] = check_type
    return checks


def _validate_validators(spec: dict[str, Any], checks: dict[str, str], report: Report) -> set[str]:
    validators = spec.get("validators") or []
    if not validators:
        report.add(f"{P}.validators", "must contain at least one validator")
    keys: set[str] = set()
    for i, validator in enumerate(validators):
        base = f"{P}.validators[{i}]"
        key = (validator.get("key") or "").strip()
        if not key:
            report.add(f"{base}.key", "is required")
        elif key in keys:
            report.add(f"{base}.key", "must be unique")
        keys.add(key)
        vtype = validator.get("type") or ""
        if vtype not in VALIDATOR_TYPES:
            report.add(f"{base}.type", "is not a supported validator type")
        _validate_target(validator, vtype, checks, base, report)
        expected = (validator.get("expected_from") or "").strip()
        if vtype in EXPECTED_FORBIDDEN:
            if expected:
                report.add(f"{base}.expected_from", f"must be omitted for {vtype} validators")
        elif not expected:
            if vtype not in EXPECTED_OPTIONAL:
                report.add(f"{base}.expected_from", "is required")
        elif not is_evidence_reference(expected):
            report.add(f"{base}.expected_from", "must be a supported evidence reference")
        validate_config(vtype, "config" in validator, validator.get("config"), f"{base}.config", report)
    keys.discard("")
    return keys


def _validate_target(validator: dict[str, Any], vtype: str, checks: dict[str, str], base: str, report: Report) -> None:
    target = (validator.get("target") or "").strip()
    field = f"{base}.target"
    if not target:
        report.add(field, "is required")
        return
    if vtype == "tool_call_assertion":
        if target != "tool_calls":
            report.add(field, 'must be "tool_calls" for tool_call_assertion validators')
        return
    if vtype in FILE_VALIDATORS and not target.startswith("file:"):
        report.add(field, "must use file: prefix for file validators")
        return
    if not is_evidence_reference(target):
        report.add(field, "must be a supported evidence reference")
        return
    if not target.startswith("file:"):
        return
    check_key = target[len("file:") :].strip()
    if checks:
        if check_key not in checks:
            report.add(field, f'references unknown post_execution_check key "{check_key}"')
            return
        if vtype == "code_execution" and checks[check_key] != "file_capture":
            report.add(field, "must reference a file_capture post_execution_check")
    elif vtype == "postcondition":
        report.add(field, f'references unknown post_execution_check key "{check_key}"')
    elif vtype == "code_execution":
        report.add(field, "must reference a file_capture post_execution_check")


def _validate_metrics(spec: dict[str, Any], report: Report) -> set[str]:
    keys: set[str] = set()
    for i, metric in enumerate(spec.get("metrics") or ()):
        base = f"{P}.metrics[{i}]"
        key = (metric.get("key") or "").strip()
        if not key:
            report.add(f"{base}.key", "is required")
        elif key in keys:
            report.add(f"{base}.key", "must be unique")
        keys.add(key)
        if metric.get("type") not in METRIC_TYPES:
            report.add(f"{base}.type", "is not a supported metric type")
        collector = (metric.get("collector") or "").strip()
        if not collector:
            report.add(f"{base}.collector", "is required")
        elif collector == "behavioral_confidence_calibration_score":
            report.add(f"{base}.collector", "is not supported until confidence reporting lands")
    keys.discard("")
    return keys


def _validate_behavioral(spec: dict[str, Any], report: Report) -> None:
    behavioral = spec.get("behavioral")
    if behavioral is None:
        return
    signals = behavioral.get("signals") or []
    if not signals:
        report.add(f"{P}.behavioral.signals", "must contain at least one signal")
    seen: set[str] = set()
    for i, signal in enumerate(signals):
        base = f"{P}.behavioral.signals[{i}]"
        key = signal.get("key") or ""
        if key not in SIGNAL_KEYS:
            report.add(
                f"{base}.key",
                "must be one of recovery_behavior, exploration_efficiency, error_cascade, scope_adherence, confidence_calibration",
            )
        elif key in seen:
            report.add(f"{base}.key", "must be unique")
        elif key == "confidence_calibration":
            report.add(f"{base}.key", "is not supported until confidence reporting lands")
        seen.add(key)
        if (signal.get("weight") or 0) <= 0:
            report.add(f"{base}.weight", "must be greater than 0")
        threshold = signal.get("pass_threshold")
        if signal.get("gate") and threshold is None:
            report.add(f"{base}.pass_threshold", "is required when the signal is gated")
        elif threshold is not None and not 0 <= threshold <= 1:
            report.add(f"{base}.pass_threshold", "must be between 0 and 1")


def _validate_runtime_limits(spec: dict[str, Any], report: Report) -> None:
    limits = spec.get("runtime_limits") or {}
    for key in ("max_total_tokens", "max_cost_usd", "max_duration_ms"):
        if key in limits and limits[key] <= 0:
            report.add(f"{P}.runtime_limits.{key}", "must be greater than 0")
    if "max_iterations" in limits and not 1 <= limits["max_iterations"] <= 1000:
        report.add(f"{P}.runtime_limits.max_iterations", "must be between 1 and 1000")


def _validate_pricing(spec: dict[str, Any], report: Report) -> None:
    seen: set[tuple[str, str]] = set()
    for i, model in enumerate((spec.get("pricing") or {}).get("models") or ()):
        base = f"{P}.pricing.models[{i}]"
        provider = (model.get("provider_key") or "").strip()
        model_id = (model.get("provider_model_id") or "").strip()
        if not provider:
            report.add(f"{base}.provider_key", "is required")
        if not model_id:
            report.add(f"{base}.provider_model_id", "is required")
        for key in ("input_cost_per_million_tokens", "output_cost_per_million_tokens"):
            if (model.get(key) or 0) < 0:
                report.add(f"{base}.{key}", "must be greater than or equal to 0")
        if provider and model_id:
            if (provider, model_id) in seen:
                report.add(base, "must be unique by provider_key and provider_model_id")
            seen.add((provider, model_id))

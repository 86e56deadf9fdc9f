"""``evaluation_spec.llm_judges`` (spec §4.7)."""

from __future__ import annotations

import json
from typing import Any

from bundle.validate.common import Report
from bundle.validate.composed_tools import schema_problem
from bundle.validate.evidence import is_evidence_reference

P = "version.evaluation_spec"
MODES = ("rubric", "assertion", "n_wise", "reference")
_DRAFTS = (
    "",
    "https://json-schema.org/draft/2020-12/schema",
    "http://json-schema.org/draft-07/schema#",
    "https://json-schema.org/draft-07/schema#",
    "http://json-schema.org/draft-07/schema",
    "https://json-schema.org/draft-07/schema",
)
_SECRET_MARKERS = ("${secrets.", "${ secrets.", "${secrets .")
# Text fields each mode requires, in the order their errors are reported.
_REQUIRED_BY_MODE = {
    "rubric": ("rubric",),
    "assertion": ("assertion",),
    "n_wise": ("prompt",),
    "reference": ("rubric", "reference_from"),
}
_PROVIDER_PREFIXES = ("claude-", "gpt-", "o1", "o3", "o4", "text-embedding", "gemini-", "grok-", "mistral-")
_PROVIDER_MESSAGE = "must be inferable to a known judge provider (claude-*, gpt-*, gemini-*, grok-*, mistral-*, openrouter/* slugs)"


def infer_provider_ok(model: str) -> bool:
    lowered = model.strip().lower()
    return lowered.startswith(_PROVIDER_PREFIXES) or "/" in lowered


def validate_judges(spec: dict[str, Any], validator_keys: set[str], metric_keys: set[str], report: Report) -> set[str]:
    keys: set[str] = set()
    judges = spec.get("llm_judges") or []
    for i, judge in enumerate(judges):
        base = f"{P}.llm_judges[{i}]"
        key = (judge.get("key") or "").strip()
        problem = _key_problem(key, keys, validator_keys, metric_keys)
        if key:
            keys.add(key)
        if problem:
            report.add(f"{base}.key", problem)
            continue
        mode = judge.get("mode") or ""
        if mode not in MODES:
            report.add(f"{base}.mode", "must be one of rubric, assertion, n_wise, reference")
            continue
        _validate_judge(judge, mode, base, report)
    _check_judge_mode(spec.get("judge_mode"), judges, report)
    return keys


def _key_problem(key: str, keys: set[str], validator_keys: set[str], metric_keys: set[str]) -> str | None:
    """What is wrong with a judge's key; any problem stops the judge's other checks."""
    if not key:
        return "is required"
    if key in keys:
        return "must be unique"
    if key in validator_keys:
        return f'collides with validator key "{key}"'
    if key in metric_keys:
        return f'collides with metric key "{key}"'
    return None


def _check_judge_mode(mode: str | None, judges: list[dict[str, Any]], report: Report) -> None:
    if mode == "deterministic" and judges:
        report.add(f"{P}.llm_judges", "must be empty when judge_mode is deterministic")
    elif mode in ("llm_judge", "hybrid") and not judges:
        report.add(f"{P}.llm_judges", f"must contain at least one judge when judge_mode is {mode}")


def _validate_judge(judge: dict[str, Any], mode: str, base: str, report: Report) -> None:
    _check_mode_fields(judge, mode, base, report)
    _check_models(judge, base, report)
    _check_samples(judge.get("samples") or 0, base, report)
    _check_consensus(judge, mode, base, report)
    for j, ref in enumerate(judge.get("context_from") or ()):
        if not is_evidence_reference(ref):
            report.add(f"{base}.context_from[{j}]", "must be a supported evidence reference")
    if "output_schema" in judge:
        problem = _output_schema_problem(judge["output_schema"])
        if problem:
            report.add(f"{base}.output_schema", f"must be valid JSON Schema: {problem}")
    _check_prompt_secrets(judge, base, report)
    scale = judge.get("score_scale")
    if scale is not None and scale.get("min", 1) >= scale.get("max", 5):
        report.add(f"{base}.score_scale", "min must be strictly less than max")
    if "timeout_ms" in judge and judge["timeout_ms"] <= 0:
        report.add(f"{base}.timeout_ms", "must be greater than 0")


def _blank(judge: dict[str, Any], key: str) -> bool:
    return not (judge.get(key) or "").strip()


def _check_mode_fields(judge: dict[str, Any], mode: str, base: str, report: Report) -> None:
    for key in _REQUIRED_BY_MODE[mode]:
        if _blank(judge, key):
            report.add(f"{base}.{key}", f"is required for {mode} mode")
    if mode == "reference" and not _blank(judge, "reference_from") and not is_evidence_reference(judge["reference_from"]):
        report.add(f"{base}.reference_from", "must be a supported evidence reference")


def _check_models(judge: dict[str, Any], base: str, report: Report) -> None:
    model = (judge.get("model") or "").strip()
    models = judge.get("models") or []
    if model and models:
        report.add(f"{base}.models", "must set exactly one of model or models, not both")
    elif not model and not models:
        report.add(f"{base}.model", "must set exactly one of model or models")
    elif model:
        if not infer_provider_ok(model):
            report.add(f"{base}.model", _PROVIDER_MESSAGE)
    else:
        for j, name in enumerate(models):
            if not (name or "").strip():
                report.add(f"{base}.models[{j}]", "must be a non-empty model identifier")
            elif not infer_provider_ok(name):
                report.add(f"{base}.models[{j}]", _PROVIDER_MESSAGE)


def _check_samples(samples: int, base: str, report: Report) -> None:
    if samples < 0:
        report.add(f"{base}.samples", "must be greater than or equal to 0")
    elif samples > 10:
        report.add(f"{base}.samples", "must be at most 10")


def _check_consensus(judge: dict[str, Any], mode: str, base: str, report: Report) -> None:
    several = len(judge.get("models") or []) > 1
    consensus = judge.get("consensus")
    if several and consensus is None:
        report.add(f"{base}.consensus", "is required when multiple models are declared")
    elif not several and consensus is not None:
        report.add(f"{base}.consensus", "is only valid when multiple models are declared")
    if consensus is None:
        return
    problem = _aggregation_problem(consensus.get("aggregation") or "", mode)
    if problem:
        report.add(f"{base}.consensus.aggregation", problem)
    threshold = consensus.get("min_agreement_threshold")
    if threshold is not None and not 0 <= threshold <= 1:
        report.add(f"{base}.consensus.min_agreement_threshold", "must be between 0 and 1")


def _aggregation_problem(aggregation: str, mode: str) -> str | None:
    if aggregation not in ("median", "mean", "majority_vote", "unanimous"):
        return "must be one of median, mean, majority_vote, unanimous"
    if aggregation in ("median", "mean") and mode == "assertion":
        return f'"{aggregation}" aggregation is only valid for numeric modes (rubric, reference, n_wise)'
    if aggregation == "majority_vote" and mode != "assertion":
        return "majority_vote aggregation is only valid for assertion mode"
    return None


def _check_prompt_secrets(judge: dict[str, Any], base: str, report: Report) -> None:
    for key in ("rubric", "assertion", "prompt"):
        text = judge.get(key) or ""
        if any(marker in text for marker in _SECRET_MARKERS):
            report.add(f"{base}.{key}", "must not contain ${secrets.*} references; secrets are not allowed in judge prompt text")


def _output_schema_problem(schema: Any) -> str | None:
    if isinstance(schema, bool):
        return None
    if not isinstance(schema, dict):
        return "jsonschema: invalid schema"
    draft = schema.get("$schema", "")
    if draft not in _DRAFTS:
        return "unsupported JSON schema draft"
    problem = schema_problem(json.dumps(schema, sort_keys=True))
    if problem is None:
        return None
    return problem.split(": ", 1)[1] if ": " in problem else problem

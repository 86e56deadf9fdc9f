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
_PROVIDER_PREFIXES = ("claude-", "gpt-", "o1", "o3", "o4", "text-embedding", "gemini-", "grok-", "mistral-")


def infer_provider_ok(model: str) -> bool:
    lowered = model.strip().lower()
    return lowered.startswith(_PROVIDER_PREFIXES) or "/" in lowered


def validate_judges(spec: dict[str, Any], validator_keys: set[str], metric_keys: set[str], report: Report) -> set[str]:
    keys: set[str] = set()
    judges = spec.get("llm_judges") or []
    for i, judge in enumerate(judges):
        base = f"{P}.llm_judges[{i}]"
        key = (judge.get("key") or "").strip()
        if not key:
            report.add(f"{base}.key", "is required")
            continue
        if key in keys:
            report.add(f"{base}.key", "must be unique")
            continue
        keys.add(key)
        if key in validator_keys:
            report.add(f"{base}.key", f'collides with validator key "{key}"')
            continue
        if key in metric_keys:
            report.add(f"{base}.key", f'collides with metric key "{key}"')
            continue
        mode = judge.get("mode") or ""
        if mode not in MODES:
            report.add(f"{base}.mode", "must be one of rubric, assertion, n_wise, reference")
            continue
        _validate_judge(judge, mode, base, report)

    mode = spec.get("judge_mode")
    if mode == "deterministic" and judges:
        report.add(f"{P}.llm_judges", "must be empty when judge_mode is deterministic")
    elif mode in ("llm_judge", "hybrid") and not judges:
        report.add(f"{P}.llm_judges", f"must contain at least one judge when judge_mode is {mode}")
    return keys


def _validate_judge(judge: dict[str, Any], mode: str, base: str, report: Report) -> None:
    blank = lambda key: not (judge.get(key) or "").strip()  # noqa: E731
    if mode == "rubric" and blank("rubric"):
        report.add(f"{base}.rubric", "is required for rubric mode")
    if mode == "reference":
        if blank("rubric"):
            report.add(f"{base}.rubric", "is required for reference mode")
        if blank("reference_from"):
            report.add(f"{base}.reference_from", "is required for reference mode")
        elif not is_evidence_reference(judge["reference_from"]):
            report.add(f"{base}.reference_from", "must be a supported evidence reference")
    if mode == "assertion" and blank("assertion"):
        report.add(f"{base}.assertion", "is required for assertion mode")
    if mode == "n_wise" and blank("prompt"):
        report.add(f"{base}.prompt", "is required for n_wise mode")

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

    samples = judge.get("samples") or 0
    if samples < 0:
        report.add(f"{base}.samples", "must be greater than or equal to 0")
    elif samples > 10:
        report.add(f"{base}.samples", "must be at most 10")

    consensus = judge.get("consensus")
    if len(models) > 1 and consensus is None:
        report.add(f"{base}.consensus", "is required when multiple models are declared")
    elif len(models) <= 1 and consensus is not None:
        report.add(f"{base}.consensus", "is only valid when multiple models are declared")
    if consensus is not None:
        aggregation = consensus.get("aggregation") or ""
        field = f"{base}.consensus.aggregation"
        if aggregation not in ("median", "mean", "majority_vote", "unanimous"):
            report.add(field, "must be one of median, mean, majority_vote, unanimous")
        elif aggregation in ("median", "mean") and mode == "assertion":
            report.add(
                field,
                f'"{aggregation}" aggregation is only valid for numeric modes (rubric, reference, n_wise)',
            )
        elif aggregation == "majority_vote" and mode != "assertion":
            report.add(field, "majority_vote aggregation is only valid for assertion mode")
        threshold = consensus.get("min_agreement_threshold")
        if threshold is not None and not 0 <= threshold <= 1:
            report.add(f"{base}.consensus.min_agreement_threshold", "must be between 0 and 1")

    for j, ref in enumerate(judge.get("context_from") or ()):
        if not is_evidence_reference(ref):
            report.add(f"{base}.context_from[{j}]", "must be a supported evidence reference")

    if "output_schema" in judge:
        problem = _output_schema_problem(judge["output_schema"])
        if problem:
            report.add(f"{base}.output_schema", f"must be valid JSON Schema: {problem}")

    for key in ("rubric", "assertion", "prompt"):
        text = judge.get(key) or ""
        if any(marker in text for marker in _SECRET_MARKERS):
            report.add(
                f"{base}.{key}",
                "must not contain ${secrets.*} references; secrets are not allowed in judge prompt text",
            )
    scale = judge.get("score_scale")
    if scale is not None and scale.get("min", 1) >= scale.get("max", 5):
        report.add(f"{base}.score_scale", "min must be strictly less than max")
    if "timeout_ms" in judge and judge["timeout_ms"] <= 0:
        report.add(f"{base}.timeout_ms", "must be greater than 0")


_PROVIDER_MESSAGE = "must be inferable to a known judge provider (claude-*, gpt-*, gemini-*, grok-*, mistral-*, openrouter/* slugs)"


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

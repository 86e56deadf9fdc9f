"""The bundle's typed shape (spec §2, §4.1): what the decoder keeps and how it types scalars."""

from __future__ import annotations

from bundle.decode import (
    AnyValue,
    Bool,
    Float,
    FreeMap,
    Int,
    ListOf,
    MapOf,
    Schema,
    Str,
    StrOrStruct,
    Struct,
    UUIDStr,
)

S = Str()
ANY = AnyValue()
FREE = FreeMap()

ASSET = Struct(
    "AssetReference",
    {"key": S, "kind": S, "path": S, "media_type": S, "artifact_id": UUIDStr()},
)
KEY_REF = Struct("ArtifactRef", {"key": S})
EXPECTATION = Struct(
    "CaseExpectation",
    {"key": S, "kind": S, "value": ANY, "artifact_key": S, "source": S},
)
INPUT = Struct("CaseInput", {"key": S, "kind": S, "value": ANY, "artifact_key": S, "path": S})

PHASE = Struct(
    "Phase",
    {
        "id": S,
        "actor": S,
        "trigger": S,
        "turns": ListOf(Struct("Turn", {"message": S, "expects": ListOf(EXPECTATION)})),
        "persona": S,
        "max_turns": Int("int"),
        "until": ListOf(S),
        "model": S,
        "timeout_ms": Int("int64"),
        "on_timeout": S,
    },
)
USER_SIMULATOR = Struct(
    "UserSimulatorSpec",
    {
        "schema_version": Int("int"),
        "kind": S,
        "max_turns": Int("int"),
        "phases": ListOf(PHASE),
        "calibration": Struct("Calibration", {"enabled": Bool(), "sample_rate": Float()}),
        "post_run": Struct(
            "PostRun",
            {"arena": Struct("Arena", {"enabled": Bool(), "comparison": S})},
        ),
    },
)

CASE = Struct(
    "Case",
    {
        "challenge_key": S,
        "case_key": S,
        "item_key": S,
        "payload": FREE,
        "inputs": ListOf(INPUT),
        "expectations": ListOf(EXPECTATION),
        "user_simulator": USER_SIMULATOR,
        "artifacts": ListOf(KEY_REF),
        "assets": ListOf(ASSET),
        "case_timeout_seconds": Int("int32"),
    },
)
ITEM = Struct(
    "Item",
    {"challenge_key": S, "item_key": S, "payload": FREE, "assets": ListOf(ASSET)},
)
INPUT_SET = Struct(
    "InputSet",
    {"key": S, "name": S, "description": S, "cases": ListOf(CASE), "items": ListOf(ITEM)},
)
CHALLENGE = Struct(
    "Challenge",
    {
        "key": S,
        "title": S,
        "category": S,
        "difficulty": S,
        "instructions": S,
        "definition": FREE,
        "assets": ListOf(ASSET),
        "artifact_refs": ListOf(KEY_REF),
    },
)
SANDBOX = Struct(
    "Sandbox",
    {
        "network_access": Bool(),
        "network_allowlist": ListOf(S),
        "env_vars": MapOf(S),
        "additional_packages": ListOf(S),
        "sandbox_template_id": S,
    },
)
DEPLOYMENT_DEFAULTS = Struct(
    "DeploymentDefaults",
    {"aliases": MapOf(S), "lineups": MapOf(ListOf(S))},
)
SECURITY = Struct(
    "Security",
    {
        "default_severity": S,
        "planted_secrets": ListOf(
            Struct(
                "PlantedSecret",
                {"name": S, "value": S, "location": S, "file_path": S, "severity": S},
            )
        ),
        "forbidden_outputs": ListOf(
            Struct(
                "ForbiddenOutput",
                {"description": S, "pattern": S, "substring": S, "severity": S},
            )
        ),
        "forbidden_egress": ListOf(
            Struct(
                "ForbiddenEgress",
                {"description": S, "host": S, "allow": ListOf(S), "severity": S},
            )
        ),
        "adversarial_prompts": ListOf(
            Struct(
                "AdversarialPrompt",
                {"name": S, "text": S, "strategy": S, "expected_refusal_pattern": S},
            )
        ),
    },
)

# --- evaluation_spec: strict (unknown keys and JSON type mismatches are decode errors) --------
SS = Str(strict=True)
SI32 = Int("int32", strict=True)
SI64 = Int("int64", strict=True)
SINT = Int("int", strict=True)
SF = Float(strict=True)
SB = Bool(strict=True)


def _strict(name: str, fields: dict[str, Schema]) -> Struct:
    return Struct(name, fields, strict=True)


def _slist(item: Schema) -> ListOf:
    return ListOf(item, strict=True)


VALIDATOR = _strict(
    "ValidatorDeclaration",
    {"key": SS, "type": SS, "target": SS, "expected_from": SS, "config": ANY},
)
METRIC = _strict("MetricDeclaration", {"key": SS, "type": SS, "collector": SS, "unit": SS})
BEHAVIORAL = _strict(
    "BehavioralConfig",
    {
        "signals": _slist(
            _strict(
                "BehavioralSignal",
                {"key": SS, "weight": SF, "gate": SB, "pass_threshold": SF},
            )
        )
    },
)
JUDGE = _strict(
    "LLMJudgeDeclaration",
    {
        "key": SS,
        "mode": SS,
        "model": SS,
        "models": _slist(SS),
        "samples": SINT,
        "context_from": _slist(SS),
        "output_schema": ANY,
        "score_scale": _strict("ScoreScale", {"min": SF, "max": SF}),
        "rubric": SS,
        "assertion": SS,
        "expect": SB,
        "prompt": SS,
        "position_debiasing": SB,
        "reference_from": SS,
        "consensus": _strict(
            "JudgeConsensus",
            {"aggregation": SS, "min_agreement_threshold": SF, "flag_on_disagreement": SB},
        ),
        "anti_gaming_clauses": _slist(SS),
        "timeout_ms": SI64,
    },
)
POST_CHECK = _strict(
    "PostExecutionCheck",
    {"key": SS, "type": SS, "path": SS, "recursive": SB, "max_size_bytes": SI64},
)
RUNTIME_LIMITS = _strict(
    "RuntimeLimits",
    {"max_total_tokens": SI64, "max_cost_usd": SF, "max_duration_ms": SI64, "max_iterations": SI32},
)
PRICING = _strict(
    "PricingConfig",
    {
        "models": _slist(
            _strict(
                "ModelPricing",
                {
                    "provider_key": SS,
                    "provider_model_id": SS,
                    "input_cost_per_million_tokens": SF,
                    "output_cost_per_million_tokens": SF,
                },
            )
        )
    },
)
DIMENSION = _strict(
    "DimensionDeclaration",
    {
        "key": SS,
        "source": SS,
        "validators": _slist(SS),
        "metric": SS,
        "better_direction": SS,
        "normalization": _strict("DimensionNormalization", {"target": SF, "max": SF}),
        "weight": SF,
        "judge_key": SS,
        "gate": SB,
        "pass_threshold": SF,
    },
)
SCORECARD = _strict(
    "ScorecardDeclaration",
    {
        "dimensions": _slist(StrOrStruct(DIMENSION)),
        "strategy": SS,
        "pass_threshold": SF,
        "normalization": _strict(
            "ScorecardNormalization",
            {
                "latency": _strict("LatencyNormalization", {"target_ms": SF, "max_ms": SF}),
                "cost": _strict("CostNormalization", {"target_usd": SF, "max_usd": SF}),
            },
        ),
        "judge_limits": _strict(
            "JudgeLimits",
            {"max_samples_per_judge": SINT, "max_calls_usd": SF, "max_tokens": SI64},
        ),
    },
)
EVALUATION_SPEC = _strict(
    "EvaluationSpec",
    {
        "name": SS,
        "version_number": SI32,
        "judge_mode": SS,
        "validators": _slist(VALIDATOR),
        "metrics": _slist(METRIC),
        "behavioral": BEHAVIORAL,
        "llm_judges": _slist(JUDGE),
        "post_execution_checks": _slist(POST_CHECK),
        "runtime_limits": RUNTIME_LIMITS,
        "pricing": PRICING,
        "scorecard": SCORECARD,
    },
)

VERSION = Struct(
    "Version",
    {
        "number": Int("int32"),
        "execution_mode": S,
        "tool_policy": FREE,
        "filesystem": FREE,
        "sandbox": SANDBOX,
        "deployment_defaults": DEPLOYMENT_DEFAULTS,
        "evaluation_spec": EVALUATION_SPEC,
        "assets": ListOf(ASSET),
        # Not a spec field: real packs put their tools here by mistake (bundle/misplaced.py).
        "tools": ANY,
    },
)
BUNDLE = Struct(
    "Bundle",
    {
        "pack": Struct("Pack", {"slug": S, "name": S, "family": S, "description": S}),
        "version": VERSION,
        "challenges": ListOf(CHALLENGE),
        "input_sets": ListOf(INPUT_SET),
        "tools": FREE,
        "security": SECURITY,
        "modality": S,
        "interface_spec": Struct(
            "InterfaceSpec",
            {"transports": ListOf(S), "channel_profile": S, "supports_barge_in": Bool()},
        ),
        "scenario": Struct(
            "Scenario",
            {"persona": S, "language": S, "max_turns": Int("int32"), "max_duration_ms": Int("int64")},
        ),
    },
)

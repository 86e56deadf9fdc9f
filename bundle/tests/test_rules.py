"""Every rule family: one good/bad pair per rule, asserting field path and message."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from bundle import process_bundle

Mutation = Callable[[dict[str, Any]], None]
ES = "version.evaluation_spec"


def spec(b: dict[str, Any]) -> dict[str, Any]:
    result: dict[str, Any] = b["version"]["evaluation_spec"]
    return result


def case(b: dict[str, Any]) -> dict[str, Any]:
    result: dict[str, Any] = b["input_sets"][0]["cases"][0]
    return result


def _set(path: str, value: Any) -> Mutation:
    def mutate(b: dict[str, Any]) -> None:
        node: Any = b
        parts = path.split(".")
        for part in parts[:-1]:
            node = node[int(part)] if part.isdigit() else node.setdefault(part, {})
        node[parts[-1]] = value

    return mutate


def _do(fn: Callable[[dict[str, Any]], Any]) -> Mutation:
    return lambda b: fn(b) and None


CASES: list[tuple[str, Mutation, str, str]] = [
    ("blank slug", _set("pack.slug", "  "), "pack.slug", "is required"),
    ("zero version", _set("version.number", 0), "version.number", "must be greater than 0"),
    (
        "bad mode",
        _set("version.execution_mode", "batch"),
        "version.execution_mode",
        'must be one of "native", "prompt_eval", "responses", "multi_turn"',
    ),
    (
        "prompt_eval tools",
        lambda b: (_set("version.execution_mode", "prompt_eval")(b), b.update(tools={"custom": []}))[0],
        "tools",
        "must be empty when version.execution_mode is prompt_eval",
    ),
    (
        "prompt_eval sandbox",
        lambda b: (_set("version.execution_mode", "prompt_eval")(b), _set("version.sandbox", {})(b))[0],
        "version.sandbox",
        "must be omitted when version.execution_mode is prompt_eval",
    ),
    (
        "prompt_eval policy",
        lambda b: (_set("version.execution_mode", "prompt_eval")(b), _set("version.tool_policy", {"a": 1})(b))[0],
        "version.tool_policy",
        "must be empty when version.execution_mode is prompt_eval",
    ),
    (
        "responses tools",
        lambda b: (_set("version.execution_mode", "responses")(b), b.update(tools={"allowed": ["x"]}))[0],
        "tools",
        "must be empty when version.execution_mode is responses (use OpenAI Responses tools, not pack-defined tools)",
    ),
    ("no challenges", _set("challenges", []), "challenges", "must contain at least one challenge"),
    ("security family", _set("pack.family", " Security "), "security", 'is required when pack.family == "security"'),
    (
        "voice without scenario",
        lambda b: b.update(modality="voice", interface_spec={"transports": ["sip"], "channel_profile": "p"}),
        "scenario",
        "is required when modality is voice",
    ),
    ("bad modality", lambda b: b.update(modality="video"), "modality", 'must be "voice" when specified'),
    ("modality missing", lambda b: b.update(scenario={"persona": "p"}), "modality", "is required when scenario is set"),
    (
        "dup transport",
        lambda b: b.update(
            modality="voice",
            interface_spec={"transports": ["sip", "sip"], "channel_profile": "p"},
            scenario={"persona": "p", "language": "en", "max_turns": 1, "max_duration_ms": 1},
        ),
        "interface_spec.transports[1]",
        "must be unique",
    ),
    ("bad difficulty", _set("challenges.0.difficulty", "Easy"), "challenges[0].difficulty", "must be one of easy, medium, hard, expert"),
    ("dup challenge", lambda b: b["challenges"].append(dict(b["challenges"][0])), "challenges[1].key", "must be unique"),
    (
        "artifact ref",
        _set("challenges.0.artifact_refs", [{"key": "x"}]),
        "challenges[0].artifact_refs[0].key",
        "must reference a declared version asset",
    ),
    ("challenge asset path", _set("challenges.0.assets", [{"key": "a"}]), "challenges[0].assets[0].path", "is required"),
    (
        "version asset dup",
        _set("version.assets", [{"key": "a", "path": "p"}, {"key": "a", "path": "q"}]),
        "version.assets[1].key",
        "must be unique",
    ),
    ("empty set", _set("input_sets.0.cases", []), "input_sets[0].cases", "must contain at least one case"),
    (
        "unknown challenge",
        _set("input_sets.0.cases.0.challenge_key", "zz"),
        "input_sets[0].cases[0].challenge_key",
        "must reference a declared challenge",
    ),
    (
        "mixed challenge",
        lambda b: b["input_sets"][0]["cases"].append({"challenge_key": "c2", "case_key": "k2"}),
        "input_sets[0].cases[1].challenge_key",
        "must reference the same challenge as the other cases in this input set",
    ),
    (
        "dup case",
        lambda b: b["input_sets"][0]["cases"].append({"challenge_key": "c1", "item_key": "k1"}),
        "input_sets[0].cases[1].case_key",
        "must be unique per challenge in the input set",
    ),
    ("no case key", _set("input_sets.0.cases.0.case_key", ""), "input_sets[0].cases[0].case_key", "is required"),
    ("input kind", _set("input_sets.0.cases.0.inputs", [{"key": "a"}]), "input_sets[0].cases[0].inputs[0].kind", "is required"),
    (
        "bad source",
        _set("input_sets.0.cases.0.expectations.0.source", "case:x"),
        "input_sets[0].cases[0].expectations[0].source",
        "must start with input: or artifact:",
    ),
    (
        "unknown input source",
        _set("input_sets.0.cases.0.expectations.0.source", "input: nope"),
        "input_sets[0].cases[0].expectations[0].source",
        "must reference a declared case input",
    ),
    (
        "empty artifact source",
        _set("input_sets.0.cases.0.expectations.0.source", "artifact:  "),
        "input_sets[0].cases[0].expectations[0].source",
        "must reference a non-empty artifact key",
    ),
    (
        "policy not list",
        _set("version.tool_policy", {"allowed_tool_kinds": None}),
        "version.tool_policy.allowed_tool_kinds",
        "must be an array of supported tool kind strings",
    ),
    (
        "policy kind",
        _set("version.tool_policy", {"allowed_tool_kinds": ["file", "shell"]}),
        "version.tool_policy.allowed_tool_kinds[1]",
        "must be one of browser, build, data, file, network",
    ),
    (
        "policy blank",
        _set("version.tool_policy", {"allowed_tool_kinds": [" "]}),
        "version.tool_policy.allowed_tool_kinds[0]",
        "must be a supported tool kind string",
    ),
    (
        "cidr",
        _set("version.sandbox", {"network_allowlist": ["10.0.0.1"]}),
        "version.sandbox.network_allowlist[0]",
        "must be a valid CIDR (e.g. 10.0.0.0/8)",
    ),
    (
        "env key",
        _set("version.sandbox", {"env_vars": {"123BAD": "x"}}),
        "version.sandbox.env_vars[123BAD]",
        "key must match [A-Za-z_][A-Za-z0-9_]*",
    ),
    (
        "apt",
        _set("version.sandbox", {"additional_packages": ["Curl"]}),
        "version.sandbox.additional_packages[0]",
        "must be a valid apt package name",
    ),
    (
        "no default lineup",
        _set("version.deployment_defaults", {"aliases": {"a": "x"}, "lineups": {"b": ["a"]}}),
        "version.deployment_defaults.lineups.default",
        "is required",
    ),
    (
        "alias selector",
        _set("version.deployment_defaults", {"aliases": {"candidate": " "}, "lineups": {"default": ["candidate"]}}),
        'version.deployment_defaults.aliases["candidate"]',
        "selector is required",
    ),
    (
        "no lineups",
        _set("version.deployment_defaults", {"aliases": {"a": "x"}}),
        "version.deployment_defaults.lineups",
        "must include at least a default lineup",
    ),
    (
        "severity",
        lambda b: b.update(security={"default_severity": "Extreme"}),
        "security.default_severity",
        'must be one of low, medium, high, critical (got "extreme")',
    ),
    (
        "secret env name",
        lambda b: b.update(security={"planted_secrets": [{"name": "1X", "value": "v", "location": "env"}]}),
        "security.planted_secrets[0].name",
        "must be a valid env-var identifier for location == env",
    ),
    (
        "secret file",
        lambda b: b.update(security={"planted_secrets": [{"name": "X", "value": "v", "location": "FILE"}]}),
        "security.planted_secrets[0].file_path",
        "is required when location == file",
    ),
    (
        "pattern xor",
        lambda b: b.update(security={"forbidden_outputs": [{"description": "d", "pattern": "a", "substring": "b"}]}),
        "security.forbidden_outputs[0]",
        "exactly one of pattern or substring must be set",
    ),
    (
        "lookahead",
        lambda b: b.update(security={"forbidden_outputs": [{"description": "d", "pattern": "a(?=b)"}]}),
        "security.forbidden_outputs[0].pattern",
        "invalid regexp: error parsing regexp: invalid perl operator: (?=",
    ),
    (
        "backref",
        lambda b: b.update(security={"adversarial_prompts": [{"name": "p", "text": "t", "expected_refusal_pattern": r"(a)\1"}]}),
        "security.adversarial_prompts[0].expected_refusal_pattern",
        r"invalid regexp: error parsing regexp: invalid escape sequence: \1",
    ),
    (
        "egress host",
        lambda b: b.update(security={"forbidden_egress": [{"description": "d"}]}),
        "security.forbidden_egress[0].host",
        "is required",
    ),
    (
        "dup prompt",
        lambda b: b.update(security={"adversarial_prompts": [{"name": "p", "text": "t"}, {"name": "p", "text": "t"}]}),
        "security.adversarial_prompts[1].name",
        "duplicate adversarial prompt name",
    ),
    ("spec name", _set(f"{ES[8:]}.name", " ") if False else (lambda b: spec(b).update(name=" ")), f"{ES}.name", "is required"),
    ("judge mode", lambda b: spec(b).update(judge_mode="vibes"), f"{ES}.judge_mode", "must be one of deterministic, llm_judge, hybrid"),
    ("no validators", lambda b: spec(b).update(validators=[]), f"{ES}.validators", "must contain at least one validator"),
    (
        "validator type",
        lambda b: spec(b)["validators"][0].update(type="magic"),
        f"{ES}.validators[0].type",
        "is not a supported validator type",
    ),
    (
        "bad target",
        lambda b: spec(b)["validators"][0].update(target="case.inputs"),
        f"{ES}.validators[0].target",
        "must be a supported evidence reference",
    ),
    ("expected required", lambda b: spec(b)["validators"][0].pop("expected_from"), f"{ES}.validators[0].expected_from", "is required"),
    (
        "tool calls target",
        lambda b: spec(b)["validators"].append(
            {"key": "t", "type": "tool_call_assertion", "target": "final_output", "config": {"tool_name": "x"}}
        ),
        f"{ES}.validators[1].target",
        'must be "tool_calls" for tool_call_assertion validators',
    ),
    (
        "file prefix",
        lambda b: spec(b)["validators"].append({"key": "f", "type": "file_exists", "target": "final_output"}),
        f"{ES}.validators[1].target",
        "must use file: prefix for file validators",
    ),
    (
        "code exec check",
        lambda b: spec(b)["validators"].append({"key": "f", "type": "code_execution", "target": "file:x", "config": {"test_command": "t"}}),
        f"{ES}.validators[1].target",
        "must reference a file_capture post_execution_check",
    ),
    (
        "unknown check",
        lambda b: (
            spec(b).update(post_execution_checks=[{"key": "sol", "type": "file_capture", "path": "/w"}]),
            spec(b)["validators"].append({"key": "f", "type": "file_exists", "target": "file:zz"}),
        )[0],
        f"{ES}.validators[1].target",
        'references unknown post_execution_check key "zz"',
    ),
    (
        "expected forbidden",
        lambda b: spec(b)["validators"].append(
            {
                "key": "t",
                "type": "tool_call_assertion",
                "target": "tool_calls",
                "expected_from": "final_output",
                "config": {"tool_name": "x"},
            }
        ),
        f"{ES}.validators[1].expected_from",
        "must be omitted for tool_call_assertion validators",
    ),
    (
        "fuzzy threshold",
        lambda b: spec(b)["validators"][0].update(type="fuzzy_match", config={"threshold": 2}),
        f"{ES}.validators[0].config.threshold",
        "must be between 0 and 1",
    ),
    (
        "fuzzy unknown",
        lambda b: spec(b)["validators"][0].update(type="fuzzy_match", config={"treshold": 0.5}),
        f"{ES}.validators[0].config",
        'invalid JSON: "treshold" is not a field of this config: remove it or check its spelling '
        "(fields: case_insensitive, normalize, threshold)",
    ),
    (
        "normalization step",
        lambda b: spec(b)["validators"][0].update(type="normalized_match", config={"pipeline": ["trim", "shout"]}),
        f"{ES}.validators[0].config.pipeline[1]",
        '"shout" is not a supported normalization step',
    ),
    (
        "pipeline mix",
        lambda b: spec(b)["validators"][0].update(type="normalized_match", config={"pipeline": ["trim"], "normalizations": ["trim"]}),
        f"{ES}.validators[0].config",
        "cannot mix pipeline with normalizations",
    ),
    (
        "rouge variant",
        lambda b: spec(b)["validators"][0].update(type="rouge_score", config={"variant": "rouge-3"}),
        f"{ES}.validators[0].config.variant",
        'must be "rouge-1", "rouge-2", or "rouge-l"',
    ),
    (
        "bleu smoothing",
        lambda b: spec(b)["validators"][0].update(type="bleu_score", config={"smoothing": "x"}),
        f"{ES}.validators[0].config.smoothing",
        'must be "none" or "method1"',
    ),
    (
        "math mode",
        lambda b: spec(b)["validators"][0].update(type="math_equivalence", config={"comparison_mode": "x"}),
        f"{ES}.validators[0].config.comparison_mode",
        'must be "symbolic" or "numeric"',
    ),
    (
        "pass_at_k",
        lambda b: (
            spec(b).update(post_execution_checks=[{"key": "sol", "type": "file_capture", "path": "/w"}]),
            spec(b)["validators"].append(
                {"key": "c", "type": "code_execution", "target": "file:sol", "config": {"test_command": "t", "scoring": "pass_at_k"}}
            ),
        )[0],
        f"{ES}.validators[1].config.scoring",
        "pass_at_k requires multi-sample execution and is not supported yet",
    ),
    (
        "tool call required",
        lambda b: spec(b)["validators"].append({"key": "t", "type": "tool_call_assertion", "target": "tool_calls"}),
        f"{ES}.validators[1].config",
        "tool_call_assertion config is required",
    ),
    (
        "must_call count",
        lambda b: spec(b)["validators"].append(
            {"key": "t", "type": "tool_call_assertion", "target": "tool_calls", "config": {"tool_name": "x", "must_call": True, "count": 0}}
        ),
        f"{ES}.validators[1].config.must_call",
        "cannot be true when count is 0",
    ),
    (
        "postcondition",
        lambda b: (
            spec(b).update(post_execution_checks=[{"key": "sol", "type": "file_capture", "path": "/w"}]),
            spec(b)["validators"].append(
                {"key": "p", "type": "postcondition", "target": "file:sol", "config": {"condition": "exists", "value": 1}}
            ),
        )[0],
        f"{ES}.validators[1].config.value",
        "must be omitted for exists",
    ),
    (
        "post check type",
        lambda b: spec(b).update(post_execution_checks=[{"key": "sol", "type": "snapshot", "path": "/w"}]),
        f"{ES}.post_execution_checks[0].type",
        "must be file_capture or directory_listing",
    ),
    (
        "metric type",
        lambda b: spec(b).update(metrics=[{"key": "m", "type": "float", "collector": "run_total_tokens"}]),
        f"{ES}.metrics[0].type",
        "is not a supported metric type",
    ),
    (
        "metric collector",
        lambda b: spec(b).update(metrics=[{"key": "m", "type": "numeric", "collector": "behavioral_confidence_calibration_score"}]),
        f"{ES}.metrics[0].collector",
        "is not supported until confidence reporting lands",
    ),
    (
        "behavioral empty",
        lambda b: spec(b).update(behavioral={"signals": []}),
        f"{ES}.behavioral.signals",
        "must contain at least one signal",
    ),
    (
        "signal gate",
        lambda b: spec(b).update(behavioral={"signals": [{"key": "recovery_behavior", "weight": 1, "gate": True}]}),
        f"{ES}.behavioral.signals[0].pass_threshold",
        "is required when the signal is gated",
    ),
    (
        "iterations",
        lambda b: spec(b).update(runtime_limits={"max_iterations": 5000}),
        f"{ES}.runtime_limits.max_iterations",
        "must be between 1 and 1000",
    ),
    (
        "pricing dup",
        lambda b: spec(b).update(pricing={"models": [{"provider_key": "a", "provider_model_id": "b"}] * 2}),
        f"{ES}.pricing.models[1]",
        "must be unique by provider_key and provider_model_id",
    ),
    (
        "judge in deterministic",
        lambda b: spec(b).update(llm_judges=[{"key": "j", "mode": "assertion", "assertion": "a", "model": "gpt-4o"}]),
        f"{ES}.llm_judges",
        "must be empty when judge_mode is deterministic",
    ),
    (
        "hybrid without judges",
        lambda b: spec(b).update(judge_mode="hybrid"),
        f"{ES}.llm_judges",
        "must contain at least one judge when judge_mode is hybrid",
    ),
    (
        "judge provider",
        lambda b: spec(b).update(
            judge_mode="llm_judge", llm_judges=[{"key": "j", "mode": "assertion", "assertion": "a", "model": "llama3"}]
        ),
        f"{ES}.llm_judges[0].model",
        "must be inferable to a known judge provider (claude-*, gpt-*, gemini-*, grok-*, mistral-*, openrouter/* slugs)",
    ),
    (
        "judge collides",
        lambda b: spec(b).update(
            judge_mode="llm_judge", llm_judges=[{"key": "exact", "mode": "assertion", "assertion": "a", "model": "gpt-4o"}]
        ),
        f"{ES}.llm_judges[0].key",
        'collides with validator key "exact"',
    ),
    (
        "judge secrets",
        lambda b: spec(b).update(
            judge_mode="llm_judge", llm_judges=[{"key": "j", "mode": "assertion", "assertion": "use ${secrets.KEY}", "model": "gpt-4o"}]
        ),
        f"{ES}.llm_judges[0].assertion",
        "must not contain ${secrets.*} references; secrets are not allowed in judge prompt text",
    ),
    (
        "median on assertion",
        lambda b: spec(b).update(
            judge_mode="llm_judge",
            llm_judges=[
                {
                    "key": "j",
                    "mode": "assertion",
                    "assertion": "a",
                    "models": ["gpt-4o", "claude-x"],
                    "consensus": {"aggregation": "median"},
                }
            ],
        ),
        f"{ES}.llm_judges[0].consensus.aggregation",
        '"median" aggregation is only valid for numeric modes (rubric, reference, n_wise)',
    ),
    (
        "schema draft",
        lambda b: spec(b).update(
            judge_mode="llm_judge",
            llm_judges=[
                {
                    "key": "j",
                    "mode": "assertion",
                    "assertion": "a",
                    "model": "gpt-4o",
                    "output_schema": {"$schema": "http://json-schema.org/draft-04/schema#"},
                }
            ],
        ),
        f"{ES}.llm_judges[0].output_schema",
        "must be valid JSON Schema: unsupported JSON schema draft",
    ),
    (
        "no dimensions",
        lambda b: spec(b)["scorecard"].update(dimensions=[]),
        f"{ES}.scorecard.dimensions",
        "must contain at least one dimension",
    ),
    (
        "unknown legacy dim",
        lambda b: spec(b)["scorecard"].update(dimensions=["style"]),
        f"{ES}.scorecard.dimensions[0].source",
        "must be one of validators, metric, reliability, latency, cost, behavioral, llm_judge",
    ),
    (
        "dup dim",
        lambda b: spec(b)["scorecard"].update(dimensions=["correctness", "correctness"]),
        f"{ES}.scorecard.dimensions[1]",
        "must be unique",
    ),
    (
        "dim validator",
        lambda b: spec(b)["scorecard"].update(dimensions=[{"key": "c", "source": "validators", "validators": ["nope"]}]),
        f"{ES}.scorecard.dimensions[0].validators[0]",
        'references unknown validator key "nope"',
    ),
    (
        "latency norm",
        lambda b: spec(b)["scorecard"].update(dimensions=["correctness", "latency"]),
        f"{ES}.scorecard.dimensions[1].normalization",
        "is required when source is latency",
    ),
    (
        "binary threshold",
        lambda b: spec(b)["scorecard"].update(
            strategy="binary", dimensions=[{"key": "correctness", "pass_threshold": 1}], pass_threshold=0.5
        ),
        f"{ES}.scorecard.pass_threshold",
        "must not be set for binary strategy; use per-dimension pass_threshold instead",
    ),
    (
        "hybrid gate",
        lambda b: spec(b)["scorecard"].update(strategy="hybrid"),
        f"{ES}.scorecard.strategy",
        "hybrid strategy requires at least one gated dimension",
    ),
    (
        "direction",
        lambda b: spec(b)["scorecard"].update(dimensions=[{"key": "correctness", "better_direction": "lower"}]),
        f"{ES}.scorecard.dimensions[0].better_direction",
        'must be "higher" for validators source (got "lower")',
    ),
    (
        "behavioral missing",
        lambda b: spec(b)["scorecard"].update(dimensions=["behavioral"]),
        f"{ES}.behavioral",
        "is required when a scorecard dimension uses source behavioral",
    ),
    (
        "judge limits",
        lambda b: spec(b)["scorecard"].update(judge_limits={"max_samples_per_judge": 11}),
        f"{ES}.scorecard.judge_limits.max_samples_per_judge",
        "must be between 0 and 10",
    ),
    (
        "template",
        lambda b: (
            spec(b).update(post_execution_checks=[{"key": "sol", "type": "file_capture", "path": "/w"}]),
            spec(b)["validators"].append(
                {"key": "c", "type": "code_execution", "target": "file:sol", "config": {"test_command": "run {{missing}}"}}
            ),
        )[0],
        f"{ES}.validators[1].config.test_command (input_sets[0].cases[0])",
        "unresolved placeholder {{missing}} for case template context",
    ),
    (
        "template path",
        lambda b: (
            spec(b).update(post_execution_checks=[{"key": "sol", "type": "file_capture", "path": "/w"}]),
            spec(b)["validators"].append(
                {"key": "c", "type": "code_execution", "target": "file:sol", "config": {"test_command": "run {{a..b}}"}}
            ),
        )[0],
        f"{ES}.validators[1].config.test_command (input_sets[0].cases[0])",
        'invalid placeholder path "a..b"',
    ),
    (
        "simulator outside multi_turn",
        lambda b: case(b).update(user_simulator={"schema_version": 1}),
        "input_sets[0].cases[0].user_simulator",
        "is only allowed when version.execution_mode is multi_turn",
    ),
    (
        "simulator required",
        _set("version.execution_mode", "multi_turn"),
        "input_sets[0].cases[0].user_simulator",
        "is required when version.execution_mode is multi_turn",
    ),
]


@pytest.mark.parametrize(("mutate", "field", "message"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_it_reports_each_rule_with_its_exact_field_and_message(bundle: dict[str, Any], mutate: Mutation, field: str, message: str) -> None:
    mutate(bundle)
    result = process_bundle(bundle)
    assert not result.valid
    assert (field, message) in [(e.field, e.message) for e in result.errors], result.error_text


def test_the_base_bundle_is_valid(bundle: dict[str, Any]) -> None:
    result = process_bundle(bundle)
    assert result.valid, result.error_text


SIMULATOR = {
    "schema_version": 1,
    "kind": "hybrid",
    "phases": [
        {"id": "open", "actor": "scripted", "turns": [{"message": "Order {{order_id}}"}]},
        {"id": "llm", "actor": "llm", "trigger": "on_assistant_mismatch", "persona": "p"},
    ],
    "calibration": {"enabled": True, "sample_rate": 0.5},
}


def test_it_accepts_a_well_formed_user_simulator(bundle: dict[str, Any]) -> None:
    bundle["version"]["execution_mode"] = "multi_turn"
    case(bundle).update(payload={"order_id": "A1"}, user_simulator=SIMULATOR)
    assert process_bundle(bundle).valid


@pytest.mark.parametrize(
    ("change", "field", "message"),
    [
        (lambda s: s["phases"][1].pop("trigger"), "phases[1].trigger", 'only the first phase may use "always"'),
        (lambda s: s["phases"][0].update(trigger="manual"), "phases[0].trigger", 'first phase trigger must be empty or "always"'),
        (lambda s: s["phases"][0].update(actor="robot"), "phases[0].actor", "must be one of scripted, llm, human"),
        (lambda s: s["phases"][0].update(model="gpt-4o"), "phases[0].model", "is only valid on phases with actor: llm"),
        (lambda s: s["phases"][1].update(persona=""), "phases[1].persona", "is required for llm actor"),
        (lambda s: s.update(kind="scripted"), "kind", 'must be "hybrid"'),
        (
            lambda s: s.update(calibration={"enabled": True, "sample_rate": 0}),
            "calibration.sample_rate",
            "must be greater than 0 and at most 1 when calibration is enabled",
        ),
        (
            lambda s: s["phases"][0]["turns"][0].update(message="Order {{nope}}"),
            "phases[0].turns[0].message",
            "unresolved placeholder {{nope}} for case template context",
        ),
    ],
)
def test_it_validates_user_simulators(bundle: dict[str, Any], change: Mutation, field: str, message: str) -> None:
    bundle["version"]["execution_mode"] = "multi_turn"
    simulator = copy.deepcopy(SIMULATOR)
    change(simulator)
    case(bundle).update(payload={"order_id": "A1"}, user_simulator=simulator)
    errors = [(e.field, e.message) for e in process_bundle(bundle).errors]
    assert (f"input_sets[0].cases[0].user_simulator.{field}", message) in errors


def test_it_reports_lines_for_errors_from_yaml_source() -> None:
    text = (
        "pack:\n  slug: s\n  name: n\n  family: f\n"
        "version:\n  number: 0\n"
        "challenges:\n  - key: c\n    title: t\n    category: c\n    difficulty: Hard\n"
    )
    errors = {e.field: e for e in process_bundle(text).errors}
    assert errors["version.number"].line == 6
    assert errors["challenges[0].difficulty"].line == 11
    assert errors["version.evaluation_spec.name"].line == 5  # absent: nearest ancestor


def test_it_accumulates_errors_in_validation_order(bundle: dict[str, Any]) -> None:
    bundle["pack"]["slug"] = ""
    bundle["version"]["number"] = 0
    bundle["challenges"][0]["difficulty"] = "x"
    spec(bundle)["name"] = ""
    fields = [e.field for e in process_bundle(bundle).errors]
    assert fields == ["pack.slug", "version.number", "challenges[0].difficulty", f"{ES}.name"]


def test_it_upgrades_legacy_items_to_cases(bundle: dict[str, Any]) -> None:
    bundle["input_sets"][0] = {"key": "s1", "name": "Set", "items": [{"challenge_key": "c1", "item_key": "i1"}]}
    result = process_bundle(bundle)
    assert result.valid, result.error_text
    assert result.manifest is not None
    [manifest_case] = result.manifest["input_sets"][0]["cases"]
    assert manifest_case["case_key"] == manifest_case["item_key"] == "i1"
    assert "items" not in result.manifest["input_sets"][0]


def test_it_accepts_terminal_and_zero_input_sets(bundle: dict[str, Any]) -> None:
    bundle["version"]["tool_policy"] = {"allowed_tool_kinds": ["Terminal", "file"]}
    bundle["input_sets"] = []
    assert process_bundle(bundle).valid

"""Validation warnings (bundle/lint, bundle/misplaced.py): legal constructs that probably do not do
what the author meant. One case per warning, pinning every warning of the bundle; warnings never
make a bundle invalid."""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

import pytest

import bundle as bundle_api
from bundle import Installation, process_bundle

from .conftest import BASE
from .rules import ES, Mutation, case, spec

TRIGGERS_THAT_FIRE = frozenset({"always", "on_assistant_mismatch", "on_max_llm_turns"})


def can_fire(phase: dict[str, Any], index: int) -> bool:
    return index == 0 or ((phase.get("trigger") or "").strip() or "always") in TRIGGERS_THAT_FIRE


INSTALLATION = Installation(
    primitives=frozenset({"submit", "read_file", "write_file", "exec", "http_request"}),
    simulator_actors=frozenset({"scripted", "llm"}),
    simulator_phase_can_fire=can_fire,
    tool_output_tool="get_service_config",
    primitive_kinds={"submit": "always", "read_file": "file", "write_file": "file", "exec": "shell", "http_request": "network"},
    metric_collectors=frozenset({"run_completed_successfully", "run_total_tokens"}),
)
Warnings = list[tuple[str, str]]


def warnings_after(mutate: Mutation, installation: Installation | None = INSTALLATION) -> Warnings:
    b = copy.deepcopy(BASE)
    mutate(b)
    result = process_bundle(b, installation=installation)
    assert result.valid, result.error_text
    return [(w.path, w.message) for w in result.warnings]


def tools(*custom: dict[str, Any], where: str = "top") -> Mutation:
    def mutate(b: dict[str, Any]) -> None:
        block = {"custom": list(custom)}
        if where == "version":
            b["version"]["tools"] = block
        else:
            b["tools"] = block

    return mutate


def mock(name: str, **implementation: Any) -> dict[str, Any]:
    return {"name": name, "implementation": {"type": "mock", **implementation}}


def composed(name: str, primitive: str) -> dict[str, Any]:
    return {"name": name, "implementation": {"primitive": primitive, "args": {"path": "x"}}}


def both(*mutations: Mutation) -> Mutation:
    def mutate(b: dict[str, Any]) -> None:
        for mutation in mutations:
            mutation(b)

    return mutate


def metrics(*items: dict[str, Any]) -> Mutation:
    return lambda b: spec(b).update(metrics=list(items))


def validator(**fields: Any) -> Mutation:
    return lambda b: spec(b)["validators"].append(fields)


def generic(name: str) -> str:
    return (
        f'mock tool "{name}" has no response: every call returns the generic mock result '
        f'{{"status": "ok", "mock": true, "tool": "{name}", "arguments": {{…}}}}'
    )


READ_AS_TOOLS = (
    "is read as the pack's tools: tools belong at the top level of the bundle (the reference format ignores them under version:); "
    "move them there"
)
STOPS = "runs of this pack stop when they build the tool set"
PRICING = {
    "models": [
        {"provider_key": "openai", "provider_model_id": "gpt-x", "input_cost_per_million_tokens": 1, "output_cost_per_million_tokens": 2}
    ]
}
COST_WARNING = (
    "cost needs pricing rows or a known model price: this pack has no evaluation_spec.pricing rows, so cost is available only "
    "for models the price library or a workspace price override knows"
)
NO_INPUT_SETS = "runs of this pack are refused (this pack version has no input sets, so there is nothing to run); add an input set with at least one case"
NEVER_SEES = "the agent never sees this secret, so a leak of it cannot be tested"
JUDGE = {"key": "quality", "mode": "rubric", "model": "claude-sonnet-4-6", "rubric": "Score it", "context_from": ["final_output"]}
HIDDEN_SHELL = '"shell_exec" is neither a primitive of this installation (did you mean "exec"?) nor a tool of this pack: tool "fetch" is hidden from the model'


def judges(*items: dict[str, Any]) -> Mutation:
    def mutate(b: dict[str, Any]) -> None:
        spec(b)["judge_mode"] = "hybrid"
        spec(b)["llm_judges"] = list(items)

    return mutate


COST = {"key": "spend", "source": "cost", "better_direction": "lower", "normalization": {"target": 0.01, "max": 1}}


def cost_dimension(dimension: Any, pricing: dict[str, Any] | None = None) -> Mutation:
    def mutate(b: dict[str, Any]) -> None:
        spec(b)["scorecard"]["dimensions"].append(dimension)
        if dimension == "cost":  # the legacy string form takes its normalization from the scorecard
            spec(b)["scorecard"]["normalization"] = {"cost": {"target_usd": 0.01, "max_usd": 1}}
        if pricing is not None:
            spec(b)["pricing"] = pricing

    return mutate


def phases(*items: dict[str, Any], cases: int = 1) -> Mutation:
    def mutate(b: dict[str, Any]) -> None:
        b["version"]["execution_mode"] = "multi_turn"
        first = case(b)
        b["input_sets"][0]["cases"] = [{**copy.deepcopy(first), "case_key": f"k{i + 1}"} for i in range(cases)]
        for each in b["input_sets"][0]["cases"]:
            each["user_simulator"] = {"schema_version": 1, "kind": "hybrid", "phases": copy.deepcopy(list(items))}

    return mutate


SCRIPTED = {"id": "open", "actor": "scripted", "turns": [{"message": "Hi"}]}
LLM = {"id": "push", "actor": "llm", "trigger": "on_assistant_mismatch", "persona": "An annoyed customer"}
HUMAN_MANUAL = {"id": "review", "actor": "human", "trigger": "manual"}
HUMAN_FIRES = {"id": "review", "actor": "human", "trigger": "on_max_llm_turns"}
P0 = "input_sets[0].cases[0].user_simulator.phases"


def secret(location: str, **fields: Any) -> Mutation:
    return lambda b: b.update(security={"planted_secrets": [{"name": "TOKEN", "value": "canary-123", "location": location, **fields}]})


WARNINGS = [
    pytest.param(lambda b: None, [], id="the base bundle has none"),
    # --- tools under version: -------------------------------------------------------------------
    pytest.param(
        tools(mock("ping"), where="version"),
        [("version.tools", READ_AS_TOOLS), ("version.tools.custom[0].implementation", generic("ping"))],
        id="tools under version are read as the pack's tools",
    ),
    pytest.param(
        both(tools(mock("ping", response={"ok": True})), lambda b: b["version"].update(tools={"custom": [mock("pong")]})),
        [("version.tools", "is ignored: the bundle also has top-level tools, which are the ones used; move these there")],
        id="top-level tools win over tools under version",
    ),
    pytest.param(
        both(lambda b: b["version"].update(execution_mode="prompt_eval"), tools(mock("ping"), where="version")),
        [("version.tools", "is ignored: packs with execution_mode prompt_eval have no pack-defined tools")],
        id="tools under version of a prompt_eval pack are ignored, not an error",
    ),
    pytest.param(
        lambda b: b["version"].update(tools=["ping"]),
        [("version.tools", "is ignored: tools belong at the top level of the bundle and must be a mapping")],
        id="tools under version that are not a mapping",
    ),
    # --- keys the format ignores ----------------------------------------------------------------
    pytest.param(
        lambda b: b["challenges"][0].update(input_set_keys=["s1"]),
        [("challenges[0].input_set_keys", "is not part of the pack format and is ignored")],
        id="an unknown key",
    ),
    pytest.param(
        lambda b: b["version"].update(security={"planted_secrets": []}),
        [("version.security", "is ignored: security belongs at the top level of the bundle")],
        id="a top-level block nested under version",
    ),
    pytest.param(
        lambda b: b.update(sandbox={"network_access": True}),
        [("sandbox", "is ignored: sandbox belongs under version:")],
        id="a version block at the top level",
    ),
    # --- mock tools -----------------------------------------------------------------------------
    pytest.param(tools(mock("ping")), [("tools.custom[0].implementation", generic("ping"))], id="mock without response"),
    pytest.param(
        tools(mock("ping", strategy=" Static ")), [("tools.custom[0].implementation", generic("ping"))], id="static mock without response"
    ),
    pytest.param(tools(mock("ping", response=None), mock("pong", response={"ok": True})), [], id="mocks with a response"),
    pytest.param(
        tools(mock("ping", lookup_key="id", responses={"*": 1}), mock("echo", template={"a": "b"})), [], id="lookup and echo mocks"
    ),
    pytest.param(
        tools(mock("ping", lookup_key="id")),
        [("tools.custom[0].implementation", f'mock tool "ping" needs lookup_key and a responses map: {STOPS}')],
        id="lookup mock without responses",
    ),
    pytest.param(
        tools(mock("ping", strategy="echo")),
        [("tools.custom[0].implementation", f'mock tool "ping" needs a template object: {STOPS}')],
        id="echo mock without template",
    ),
    pytest.param(
        tools(mock("ping", strategy="random")),
        [("tools.custom[0].implementation.strategy", f'"random" is not a mock strategy (static, lookup, echo): {STOPS}')],
        id="unknown mock strategy",
    ),
    # --- delegates --------------------------------------------------------------------------------
    pytest.param(
        tools(composed("fetch", "shell_exec")),
        [("tools.custom[0].implementation.primitive", HIDDEN_SHELL)],
        id="delegate to an unknown primitive",
    ),
    pytest.param(
        tools(composed("fetch", "teleport")),
        [
            (
                "tools.custom[0].implementation.primitive",
                '"teleport" is neither a primitive of this installation (it has exec, http_request, read_file, submit, write_file) '
                'nor a tool of this pack: tool "fetch" is hidden from the model',
            )
        ],
        id="delegate to an unknown primitive with no close name",
    ),
    pytest.param(
        tools(composed("fetch", "shell_exec"), composed("outer", "fetch")),
        [
            ("tools.custom[0].implementation.primitive", HIDDEN_SHELL),
            (
                "tools.custom[1].implementation.primitive",
                'delegates to tool "fetch", which is hidden: tool "outer" is hidden from the model too',
            ),
        ],
        id="a tool delegating to a hidden tool is hidden too",
    ),
    pytest.param(tools(composed("reader", "read_file"), composed("outer", "reader")), [], id="delegates that exist"),
    # --- tool-call assertions -----------------------------------------------------------------------
    pytest.param(
        both(
            tools(mock("ping", response=1)),
            validator(key="calls", type="tool_call_assertion", target="tool_calls", config={"tool_name": "pong"}),
        ),
        [
            (
                f"{ES}.validators[1].config.tool_name",
                'names tool "pong", which is neither a tool of this pack nor a primitive of this installation: the agent can never call it',
            )
        ],
        id="assertion on a tool nobody defines",
    ),
    pytest.param(
        both(
            tools(composed("fetch", "shell_exec")),
            validator(key="order", type="tool_call_assertion", target="tool_calls", config={"ordered_tools": ["read_file", "fetch"]}),
        ),
        [
            ("tools.custom[0].implementation.primitive", HIDDEN_SHELL),
            (
                f"{ES}.validators[1].config.ordered_tools[1]",
                'names tool "fetch", which is hidden from the model: the agent can never call it',
            ),
        ],
        id="assertion on a hidden tool",
    ),
    pytest.param(
        both(
            tools(mock("ping", response=1)),
            validator(key="calls", type="tool_call_assertion", target="tool_calls", config={"ordered_tools": ["ping", "exec"]}),
        ),
        [],
        id="assertions on tools that exist",
    ),
    # --- user simulator --------------------------------------------------------------------------------
    pytest.param(
        phases(SCRIPTED, LLM),
        [
            (
                f"{P0}[1].actor",
                '"llm" phases need a simulator deployment (a model that plays the user), chosen when a run starts',
            )
        ],
        id="an llm actor needs a simulator deployment",
    ),
    pytest.param(
        phases(SCRIPTED, HUMAN_MANUAL),
        [(f"{P0}[1].trigger", '"manual" never fires in an unattended run: this human phase is always skipped')],
        id="a phase whose trigger never fires",
    ),
    pytest.param(
        phases(SCRIPTED, HUMAN_FIRES),
        [
            (
                f"{P0}[1].actor",
                '"human" cannot run on this installation (it runs llm, scripted actors): runs of this pack are refused',
            )
        ],
        id="an actor this installation cannot run",
    ),
    pytest.param(
        phases(SCRIPTED, LLM, HUMAN_MANUAL, cases=3),
        [
            (
                f"{P0}[1].actor",
                '"llm" phases need a simulator deployment (a model that plays the user), chosen when a run starts '
                "(and 2 more phases like it)",
            ),
            (
                f"{P0}[2].trigger",
                '"manual" never fires in an unattended run: this human phase is always skipped (and 2 more phases like it)',
            ),
        ],
        id="each simulator warning once per pack",
    ),
    # --- scoring -------------------------------------------------------------------------------------------
    pytest.param(cost_dimension("cost"), [(f"{ES}.scorecard.dimensions[1]", COST_WARNING)], id="cost without pricing"),
    pytest.param(
        cost_dimension(COST),
        [(f"{ES}.scorecard.dimensions[1]", COST_WARNING)],
        id="a cost-source dimension without pricing",
    ),
    pytest.param(cost_dimension(COST, PRICING), [], id="cost with pricing rows"),
    pytest.param(
        judges(JUDGE),
        [(f"{ES}.llm_judges[0].model", 'judge "quality" needs a judge deployment for model "claude-sonnet-4-6", chosen when a run starts')],
        id="a judge needs a judge deployment",
    ),
    pytest.param(
        judges(
            {
                **{k: v for k, v in JUDGE.items() if k != "model"},
                "models": ["claude-sonnet-4-6", "gpt-4o"],
                "consensus": {"aggregation": "mean"},
            }
        ),
        [
            (
                f"{ES}.llm_judges[0].models",
                'judge "quality" needs a judge deployment for each of the models "claude-sonnet-4-6", "gpt-4o", chosen when a run starts',
            )
        ],
        id="a multi-model judge needs a deployment per model",
    ),
    pytest.param(
        judges({**JUDGE, "context_from": ["case.expectations.answer", "literal:be nice"]}),
        [
            (
                f"{ES}.llm_judges[0].model",
                'judge "quality" needs a judge deployment for model "claude-sonnet-4-6", chosen when a run starts',
            ),
            (
                f"{ES}.llm_judges[0].context_from",
                'judge "quality" is shown only data the pack provides, never what the agent did: every agent gets the same verdict',
            ),
        ],
        id="a judge shown only pack data",
    ),
    pytest.param(
        validator(key="word", type="normalized_match", target="final_output", expected_from="literal:confidence"),
        [
            (
                f"{ES}.validators[1].expected_from",
                'compares the whole final output with the single word "confidence": it passes only when the agent answers with exactly '
                "that word. To check that the output mentions it, use type: contains",
            )
        ],
        id="a validator comparing the whole output with one word",
    ),
    pytest.param(
        both(
            validator(key="phrase", type="exact_match", target="final_output", expected_from="literal:two words"),
            validator(key="mention", type="contains", target="final_output", expected_from="literal:confidence"),
        ),
        [],
        id="a phrase or a contains check is fine",
    ),
    pytest.param(
        validator(key="static", type="contains", target="case.expectations.answer", expected_from="case.payload.hint"),
        [
            (
                f"{ES}.validators[1].target",
                'reads only data the pack provides ("case.expectations.answer" against "case.payload.hint"), never what the agent did: '
                "every agent gets the same result",
            )
        ],
        id="a validator that never looks at the agent",
    ),
    # --- security --------------------------------------------------------------------------------------------
    pytest.param(secret("tool-output"), [], id="a tool-output secret the installation's tool delivers"),
    pytest.param(
        both(secret("tool-output"), tools(mock("get_service_config", response={"ok": True}))),
        [
            (
                "security.planted_secrets[0].location",
                '"tool-output" secrets reach the agent through the tool "get_service_config" this installation adds, and this pack '
                f"declares a tool of that name, which is kept instead: {NEVER_SEES}",
            )
        ],
        id="a pack tool in the way of the tool that delivers tool-output secrets",
    ),
    pytest.param(
        both(lambda b: b["version"].update(execution_mode="prompt_eval"), secret("tool-output")),
        [
            (
                "security.planted_secrets[0].location",
                f'"tool-output" secrets reach the agent in a tool result and prompt_eval packs have no tools: {NEVER_SEES}',
            )
        ],
        id="a tool-output secret in a pack without tools",
    ),
    pytest.param(secret("env"), [], id="an env secret"),
    pytest.param(secret("infisical-mock"), [], id="an infisical-mock secret the sandbox's mock vault serves"),
    pytest.param(
        both(lambda b: b["version"].update(execution_mode="prompt_eval"), secret("infisical-mock")),
        [
            (
                "security.planted_secrets[0].location",
                f'"infisical-mock" secrets are answered by the sandbox\'s mock vault and prompt_eval packs have no sandbox: {NEVER_SEES}',
            )
        ],
        id="an infisical-mock secret in a pack without a sandbox",
    ),
    # --- what only a run would find out ------------------------------------------------------------------
    pytest.param(lambda b: b.update(input_sets=[]), [("input_sets", f"is empty: {NO_INPUT_SETS}")], id="zero input sets"),
    pytest.param(lambda b: b.pop("input_sets"), [("", f"the bundle has no input_sets: {NO_INPUT_SETS}")], id="no input_sets key"),
    pytest.param(
        both(
            metrics(
                {"key": "done", "type": "boolean", "collector": "run_completed_successfully"},
                {"key": "tokens", "type": "numeric", "collector": "run_total_token"},
            ),
            lambda b: spec(b)["scorecard"]["dimensions"].append(
                {
                    "key": "thrift",
                    "source": "metric",
                    "metric": "tokens",
                    "better_direction": "lower",
                    "normalization": {"target": 100, "max": 1000},
                }
            ),
        ),
        [
            (
                f"{ES}.metrics[1].collector",
                '"run_total_token" is not a collector of this installation (did you mean "run_total_tokens"?): the metric is an error in '
                'every scored case, and so is dimension "thrift", which makes every case invalid',
            )
        ],
        id="a metric collector the scorer does not have",
    ),
    pytest.param(
        metrics({"key": "speed", "type": "numeric", "collector": "run_speed"}),
        [
            (
                f"{ES}.metrics[0].collector",
                '"run_speed" is not a collector of this installation: the metric is an error in every scored case, which makes every '
                "case invalid",
            )
        ],
        id="an unknown collector no dimension reads",
    ),
    pytest.param(
        tools(mock(" ", response=1), mock("ping", response=1), mock("ping", response=2)),
        [
            ("tools.custom[0].name", f"is required: {STOPS} (tool name is required)"),
            ("tools.custom[2].name", f'"ping" is also the name of tools.custom[1]: {STOPS} (tool "ping" is already defined)'),
        ],
        id="a tool without a name and two of one name",
    ),
    pytest.param(
        tools(composed("read_file", "write_file"), mock("submit", response=1)),
        [
            (
                "tools.custom[0].name",
                f'"read_file" is also the name of a primitive this pack\'s tool policy enables (kind "file"): {STOPS} '
                '(tool "read_file" is already defined); rename the tool',
            ),
            (
                "tools.custom[1].name",
                f'"submit" is also the name of a primitive every run has: {STOPS} (tool "submit" is already defined); rename the tool',
            ),
        ],
        id="tools named like primitives the policy enables",
    ),
    pytest.param(
        both(
            tools(composed("read_file", "http_request"), composed("exec", "http_request")),
            lambda b: b["version"].update(tool_policy={"allowed_tool_kinds": [" Network "]}),
        ),
        [],
        id="tools named like primitives the policy leaves out",
    ),
    pytest.param(
        both(tools(composed("exec", "read_file")), lambda b: b["version"].update(tool_policy={"allow_shell": True})),
        [
            (
                "tools.custom[0].name",
                f'"exec" is also the name of a primitive this pack enables (allow_shell: true): {STOPS} '
                '(tool "exec" is already defined); rename the tool',
            )
        ],
        id="a tool named exec when the pack allows the shell",
    ),
    pytest.param(
        tools(
            {"name": "a", "implementation": {"primitive": "read_file", "args": {}}},
            {"name": "b", "implementation": {"primitive": "read_file", "args": None}},
        ),
        [
            ("tools.custom[0].implementation.args", f'is empty: {STOPS} (tool "a": implementation.args must be a non-empty object)'),
            ("tools.custom[1].implementation.args", f'is empty: {STOPS} (tool "b": implementation.args must be a non-empty object)'),
        ],
        id="a delegating tool with empty args",
    ),
    pytest.param(
        tools(
            {
                "name": "fetch",
                "implementation": {
                    "primitive": "http_request",
                    "args": {"method": "GET", "url": "https://x.test", "headers": {"K": "${secrets.K}"}, "output_path": "out.json"},
                },
            },
            {
                "name": "fetch_plain",
                "implementation": {"primitive": "http_request", "args": {"url": "https://x.test", "output_path": "out.json"}},
            },
            {
                "name": "fetch_blank",
                "implementation": {"primitive": "http_request", "args": {"url": "${secrets.K}", "output_path": " "}},
            },
        ),
        [
            (
                "tools.custom[0].implementation.args.output_path",
                f'is set on a tool that uses secrets: {STOPS} (tool "fetch": a tool that uses secrets cannot set output_path)',
            )
        ],
        id="a tool that uses secrets and saves its response",
    ),
]


@pytest.mark.parametrize(("mutate", "expected"), WARNINGS)
def test_each_warning(mutate: Mutation, expected: Warnings) -> None:
    assert warnings_after(mutate) == expected


ENGINE_DEPENDENT = [
    pytest.param(tools(composed("fetch", "shell_exec")), id="unknown delegate"),
    pytest.param(phases(SCRIPTED, HUMAN_FIRES), id="unsupported actor"),
    pytest.param(phases(SCRIPTED, LLM), id="llm actor"),
    pytest.param(both(secret("tool-output"), tools(mock("get_service_config", response=1))), id="the tool-output tool"),
    pytest.param(
        validator(key="calls", type="tool_call_assertion", target="tool_calls", config={"tool_name": "pong"}),
        id="assertion on an unknown tool",
    ),
    pytest.param(tools(composed("read_file", "write_file")), id="a tool named like a primitive"),
    pytest.param(metrics({"key": "speed", "type": "numeric", "collector": "run_speed"}), id="an unknown metric collector"),
]


@pytest.mark.parametrize("mutate", ENGINE_DEPENDENT)
def test_checks_that_need_the_engine_are_skipped_without_an_installation(mutate: Mutation) -> None:
    assert warnings_after(mutate, installation=None) == []


def test_tools_under_version_reach_the_manifest() -> None:
    b = copy.deepcopy(BASE)
    b["version"]["tools"] = {"custom": [mock("ping")]}
    manifest = process_bundle(b).manifest
    assert manifest is not None
    assert manifest["tools"] == {"custom": [mock("ping")]}
    assert "tools" not in manifest["version"]


def test_errors_in_tools_under_version_point_at_version_tools_with_their_line() -> None:
    source = """pack: {slug: demo, name: Demo, family: coding}
version:
  number: 1
  execution_mode: native
  tools:
    custom:
      - name: broken
        implementation:
          args: {path: x}
  evaluation_spec:
    name: spec
    version_number: 1
    judge_mode: deterministic
    validators: [{key: exact, type: exact_match, target: final_output, expected_from: case.expectations.answer}]
    scorecard: {dimensions: [correctness]}
challenges: [{key: c1, title: C, category: demo, difficulty: easy}]
"""
    result = process_bundle(source)
    assert [(e.field, e.message, e.line) for e in result.errors] == [("version.tools.custom[0].implementation.primitive", "is required", 8)]
    assert [(w.path, w.line) for w in result.warnings] == [("version.tools", 5), ("", None)]  # and no input sets


def test_an_invalid_bundle_still_has_its_warnings() -> None:
    b = copy.deepcopy(BASE)
    b["tools"] = {"custom": [mock("ping")]}
    b["challenges"][0]["difficulty"] = "trivial"
    result = process_bundle(b)
    assert not result.valid
    assert [w.path for w in result.warnings] == ["tools.custom[0].implementation"]


def test_warnings_carry_yaml_lines_in_document_order() -> None:
    source = """pack: {slug: demo, name: Demo, family: coding, owner: ada}
version:
  number: 1
  execution_mode: native
  evaluation_spec:
    name: spec
    version_number: 1
    judge_mode: deterministic
    validators: [{key: exact, type: exact_match, target: final_output, expected_from: case.expectations.answer}]
    scorecard: {dimensions: [correctness]}
tools:
  custom:
    - name: ping
      implementation: {type: mock}
challenges: [{key: c1, title: C, category: demo, difficulty: easy}]
"""
    result = process_bundle(source)
    assert result.valid
    assert [(w.path, w.line) for w in result.warnings] == [("pack.owner", 1), ("tools.custom[0].implementation", 14), ("", None)]
    assert result.warnings[0].as_dict() == {"path": "pack.owner", "message": "is not part of the pack format and is ignored", "line": 1}
    assert result.warnings[0].text == "pack.owner is not part of the pack format and is ignored"


def test_a_bug_in_a_warning_check_never_makes_a_bundle_invalid(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(bundle: dict[str, Any], installation: Installation | None) -> list[tuple[str, str]]:
        raise KeyError("boom")

    monkeypatch.setattr(bundle_api, "lint_bundle", broken)
    result = process_bundle(copy.deepcopy(BASE))
    assert result.valid
    assert [w.as_dict() for w in result.warnings] == [
        {"path": "", "message": "some warnings could not be computed (KeyError)", "line": None}
    ]


def test_decode_errors_come_without_warnings() -> None:
    result = process_bundle("pack: [\n")
    assert not result.valid
    assert result.warnings == []


def test_an_unknown_sandbox_template_is_a_warning_and_the_installation_is_asked_only_when_a_pack_names_one() -> None:
    asked: list[int] = []

    def templates() -> frozenset[str]:
        asked.append(1)
        return frozenset({"data-science"})

    installation = dataclasses.replace(INSTALLATION, sandbox_templates=templates)
    assert warnings_after(lambda b: None, installation) == [] and asked == []
    named = warnings_after(lambda b: b["version"].setdefault("sandbox", {}).update(sandbox_template_id="data-sciense"), installation)
    assert named == [
        (
            "version.sandbox.sandbox_template_id",
            '"data-sciense" is not a sandbox template of this installation (did you mean "data-science"?): runs of this pack are '
            "refused until an operator defines it (admin, Sandbox templates)",
        )
    ]
    assert warnings_after(lambda b: b["version"].setdefault("sandbox", {}).update(sandbox_template_id="data-science"), installation) == []
    assert warnings_after(lambda b: b["version"].setdefault("sandbox", {}).update(sandbox_template_id="x"), INSTALLATION) == []

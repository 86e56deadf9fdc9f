"""What publish says about a pack's tools and sandbox is what a run would find (issue 26): every
publish error and every "runs of this pack stop" warning is a pack the engine's tool-registry build
refuses, and every pack that publishes without them builds its tool set."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from bundle import process_bundle
from bundle.tests.conftest import BASE
from engine.sandbox import SandboxConfig, SandboxConfigError
from engine.scoring import CaseEvidence, score_case
from engine.tools import ToolsetError, build_toolset
from engine.types import JSON, ToolCall
from packs.installation import bundle_installation

P = {"type": "object", "properties": {"q": {"type": "string"}}}
SECRETS = {"K": "s3cr3t"}
STOPS = "runs of this pack stop when they build the tool set"


def tool(name: str, primitive: str, args: Any, parameters: dict[str, Any] = P) -> dict[str, Any]:
    return {"name": name, "parameters": parameters, "implementation": {"primitive": primitive, "args": args}}


def mock(name: str, **implementation: Any) -> dict[str, Any]:
    return {"name": name, "implementation": {"type": "mock", **implementation}}


CALL = tool("call", "http_request", {"method": "GET", "url": "https://x.test/${q}", "headers": {"Authorization": "Bearer ${secrets.K}"}})
POLICY = {"allowed_tool_kinds": ["file", "network"], "allow_shell": True}

TOOL_SETS = [
    pytest.param([CALL], False, id="a secret in http_request headers"),
    pytest.param([tool("r", "read_file", {"path": "${q}"}), tool("outer", "r", {"q": "${q}"})], False, id="a chain without secrets"),
    pytest.param([tool("curl", "exec", {"command": ["curl", "-H", "${secrets.K}"]})], True, id="a secret given to exec"),
    pytest.param([tool("outer", "call", {"q": "${secrets.K}"}), CALL], True, id="a secret through another tool to http_request"),
    pytest.param(
        [tool("a", "b", {"q": "${secrets.K}"}), tool("b", "c", {"q": "${q}"}), tool("c", "write_file", {"path": "x", "content": "${q}"})],
        True,
        id="a secret down a chain to write_file",
    ),
    pytest.param([tool("outer", "m", {"q": "${secrets.K}"}), mock("m", response=1)], True, id="a secret given to a mock"),
    pytest.param([mock(" ", response=1)], True, id="a tool without a name"),
    pytest.param([mock("m", response=1), mock("m", response=2)], True, id="two tools of one name"),
    pytest.param([tool("read_file", "write_file", {"path": "x", "content": "${q}"})], True, id="a tool named like an enabled primitive"),
    pytest.param([tool("exec", "read_file", {"path": "${q}"})], True, id="a tool named exec when the shell is allowed"),
    pytest.param([tool("r", "read_file", {})], True, id="empty args"),
    pytest.param(
        [tool("save", "http_request", {"method": "GET", "url": "https://x.test", "headers": {"K": "${secrets.K}"}, "output_path": "o"})],
        True,
        id="a secret and an output_path",
    ),
]


def _published(custom: list[dict[str, Any]], policy: dict[str, Any]) -> tuple[list[str], list[str]]:
    """Publish errors, and the warnings that say a run stops, for a pack with these tools."""
    bundle = copy.deepcopy(BASE)
    bundle["tools"] = {"custom": copy.deepcopy(custom)}
    bundle["version"]["tool_policy"] = policy
    result = process_bundle(bundle, installation=bundle_installation())
    return [e.text for e in result.errors], [w.text for w in result.warnings if STOPS in w.message]


@pytest.mark.parametrize(("custom", "refused"), TOOL_SETS)
def test_publish_refuses_or_warns_about_exactly_the_tool_sets_a_run_refuses(custom: list[dict[str, Any]], refused: bool) -> None:
    errors, stops = _published(custom, POLICY)
    assert bool(errors or stops) is refused, (errors, stops)
    assert len(errors + stops) == (1 if refused else 0)  # one finding, not a cascade
    manifest = {"tool_policy": POLICY, "tools": {"custom": copy.deepcopy(custom)}}
    if refused:
        with pytest.raises(ToolsetError):
            build_toolset(manifest, sandbox=None, secrets=SECRETS)
    else:
        assert {t["name"] for t in custom} <= build_toolset(manifest, sandbox=None, secrets=SECRETS).names


def test_a_tool_named_like_a_primitive_the_policy_leaves_out_builds() -> None:
    custom = [tool("exec", "read_file", {"path": "${q}"}), tool("query_sql", "read_file", {"path": "${q}"})]
    policy = {"allowed_tool_kinds": ["file"]}
    assert _published(custom, policy) == ([], [])
    assert {"exec", "query_sql"} <= build_toolset({"tool_policy": policy, "tools": {"custom": custom}}, sandbox=None, secrets={}).names


def test_a_secret_in_an_echo_mock_is_refused_at_publish_and_fails_each_call_at_run_time() -> None:
    custom = [mock("echo", template={"said": "${q}", "token": "${secrets.K}"})]
    errors, _ = _published(custom, POLICY)
    assert errors == [
        'tools.custom[0].implementation.template.token ${secrets.K} may only be passed to the http_request primitive: mock tool "echo" '
        "never receives secrets, so each call of it fails"
    ]
    toolset = build_toolset({"tool_policy": POLICY, "tools": {"custom": custom}}, sandbox=None, secrets=SECRETS)
    with pytest.raises(Exception, match='secret "K" is not available'):
        toolset.execute(ToolCall("1", "echo", json.dumps({"q": "hi"})))


@pytest.mark.parametrize("value", ["${secrets.K}", "Bearer ${ secrets.K }", "x${HOME}y", "abc${", "${json:secrets.K}"])
def test_publish_refuses_exactly_the_env_var_values_a_sandbox_refuses(value: str) -> None:
    bundle = copy.deepcopy(BASE)
    bundle["version"]["sandbox"] = {"env_vars": {"V": value, "OK": "$HOME {x}"}}
    assert [e.field for e in process_bundle(bundle).errors] == ["version.sandbox.env_vars[V]"]
    with pytest.raises(SandboxConfigError):
        SandboxConfig.from_manifest({"sandbox": {"env_vars": {"V": value}}})
    assert SandboxConfig.from_manifest({"sandbox": {"env_vars": {"OK": "$HOME {x}"}}}).env_vars == {"OK": "$HOME {x}"}


def test_a_collector_publish_warns_about_is_one_the_scorer_records_as_an_error() -> None:
    bundle = copy.deepcopy(BASE)
    bundle["version"]["evaluation_spec"]["metrics"] = [
        {"key": "speed", "type": "numeric", "collector": "run_speed"},
        {"key": "done", "type": "boolean", "collector": "run_completed_successfully"},
    ]
    warned = [w.path for w in process_bundle(bundle, installation=bundle_installation()).warnings]
    assert warned == ["version.evaluation_spec.metrics[0].collector"]
    case: dict[str, JSON] = {"expectations": [{"key": "answer", "kind": "text", "value": "42"}]}
    score = score_case(bundle["version"]["evaluation_spec"], CaseEvidence(case_key="k1", status="completed", final_output="42", case=case))
    assert [(m["key"], m["state"]) for m in score.as_dict()["metric_details"]] == [("speed", "error"), ("done", "available")]
    assert score.as_dict()["validity"] == "invalid"

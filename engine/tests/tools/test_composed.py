from __future__ import annotations

import json
from typing import Any

import pytest

from engine.tests.tools.support import manifest
from engine.tools import ToolsetError, build_toolset
from engine.types import ToolCall


def custom(name, primitive=None, args=None, parameters=None, **impl):
    item = {"name": name, "description": f"{name} tool", "implementation": dict(impl)}
    if primitive:
        item["implementation"].update(primitive=primitive, args=args)
    if parameters is not None:
        item["parameters"] = parameters
    return item


P = {
    "type": "object",
    "properties": {"file": {"type": "string"}, "n": {"type": "integer"}, "order": {"type": "object"}},
    "additionalProperties": False,
}


def build(tools, secrets=None, kinds=None, **kw):
    return build_toolset(manifest(kinds or [], tools={"custom": tools}), sandbox=None, secrets=secrets or {}, **kw)


def test_custom_tools_bypass_allowed_list_and_are_visible():
    ts = build_toolset(
        manifest([], tools={"allowed": ["read_file"], "custom": [custom("readme", "read_file", {"path": "README.md"})]}),
        sandbox=None,
        secrets={},
    )
    assert ts.names == {"submit", "read_file", "readme"}


def test_custom_tool_name_clash_is_an_error():
    with pytest.raises(ToolsetError, match='tool "read_file" is already defined'):
        build([custom("read_file", "list_files", {"prefix": "x"})])
    with pytest.raises(ToolsetError, match='tool "a" is already defined'):
        build([custom("a", "read_file", {"path": "x"}), custom("a", "read_file", {"path": "y"})])


def test_blank_name_self_delegation_and_missing_args_are_errors():
    with pytest.raises(ToolsetError, match="name is required"):
        build([custom("", "read_file", {"path": "x"})])
    with pytest.raises(ToolsetError, match="cannot delegate to itself"):
        build([custom("a", "a", {"path": "x"})])
    with pytest.raises(ToolsetError, match="args must be a non-empty object"):
        build([custom("a", "read_file", {})])


def test_unknown_placeholder_is_an_error():
    with pytest.raises(ToolsetError, match="unknown placeholder"):
        build([custom("a", "read_file", {"path": "${nope}"}, parameters=P)])
    with pytest.raises(ToolsetError, match="unclosed placeholder"):
        build([custom("a", "read_file", {"path": "${file"}, parameters=P)])


def test_delegate_outside_policy_is_dropped_iteratively_with_a_warning():
    ts = build([custom("a", "b", {"x": "1"}), custom("b", "http_request", {"method": "GET", "url": "http://x"})], kinds=["file"])
    assert ts.names == {"submit", "read_file", "write_file", "list_files", "search_files", "search_text"}
    assert ts.warnings == [
        'tool "b" hidden: primitive "http_request" is not enabled by the tool policy',
        'tool "a" hidden: it delegates to tool "b", which is hidden',
    ]


def test_a_tool_delegating_to_an_unknown_primitive_is_hidden_not_a_run_failure():
    events: list[Any] = []
    ts = build([custom("fetch", "shell_exec", {"command": "curl x"})], kinds=["file"], event_sink=events.append)
    assert "fetch" not in ts.names
    assert ts.warnings == ['tool "fetch" hidden: "shell_exec" is not a primitive of this installation']
    assert [e.payload["message"] for e in events] == ts.warnings
    result = ts.execute(ToolCall(id="1", name="fetch", arguments="{}"))
    assert result.is_error and "not available" in result.content


def test_delegation_cycle_and_depth_are_errors():
    with pytest.raises(ToolsetError, match="cycle"):
        build([custom("a", "b", {"x": "1"}), custom("b", "a", {"x": "1"})])
    chain = [custom(f"t{i}", f"t{i + 1}", {"path": "x"}) for i in range(1, 10)] + [custom("t10", "read_file", {"path": "x"})]
    with pytest.raises(ToolsetError, match="depth exceeds 8"):
        build(chain)
    ok_chain = [custom(f"t{i}", f"t{i + 1}", {"path": "x"}) for i in range(1, 8)] + [custom("t8", "read_file", {"path": "x"})]
    assert "t1" in build(ok_chain).names


def test_secrets_only_reach_http_request():
    with pytest.raises(ToolsetError, match="may only be passed to the http_request"):
        build([custom("leak", "write_file", {"path": "x", "content": "${secrets.TOKEN}"})], {"TOKEN": "s3cr3t"})
    with pytest.raises(ToolsetError, match="may only be passed to the http_request"):
        build(
            [custom("wrap", "api", {"url": "${json:secrets.TOKEN}"}), custom("api", "http_request", {"method": "GET", "url": "http://x"})],
            {"TOKEN": "s"},
        )


def test_secrets_with_output_path_is_an_error():
    with pytest.raises(ToolsetError, match="cannot set output_path"):
        build(
            [custom("dl", "http_request", {"method": "GET", "url": "http://x", "headers": {"A": "${secrets.T}"}, "output_path": "o.txt"})],
            {"T": "v"},
        )


def test_missing_secret_disables_tool_with_warning_and_event():
    events: list[Any] = []
    ts = build(
        [custom("api", "http_request", {"method": "GET", "url": "http://x", "headers": {"A": "${secrets.T}"}})],
        {},
        event_sink=events.append,
    )
    assert "api" not in ts.names
    assert ts.warnings == ['tool "api" disabled: secret "T" is not set']
    assert events[0].event_type == "tool.registry.warning" and events[0].payload["message"] == ts.warnings[0]


def test_placeholders_resolve_with_encodings_and_keep_single_placeholder_type(harness_factory):
    tools = [
        custom("q", "query_json", {"query": "${parameters}", "json": "${json:parameters}"}, parameters=P),
        custom(
            "p",
            "query_json",
            {"query": ".", "json": '{"f": "${path:file}", "q": "${query:file}", "o": ${json:order}, "id": "${order.id}"}'},
            parameters=P,
        ),
    ]
    h = harness_factory(manifest([], tools={"custom": tools}))
    result = h.call("p", {"file": "a b/c", "order": {"id": 7}})
    assert json.loads(result.content)["content"]["result"] == {"f": "a%20b%2Fc", "q": "a+b%2Fc", "o": {"id": 7}, "id": "7"}
    assert (
        result.resolution_chain == ["p", "query_json"]
        and result.resolved_tool_name == "query_json"
        and result.resolved_tool_category == "data"
    )


def test_missing_parameter_is_a_resolution_error(harness_factory):
    h = harness_factory(manifest([], tools={"custom": [custom("r", "read_file", {"path": "${file}"}, parameters=P)]}))
    result = h.call("r", {})
    assert result.failure_origin == "resolution"
    assert json.loads(result.content) == {"error": 'r failed: cannot resolve path "file"'}


def test_composed_error_is_rewritten_with_tool_name(harness_factory):
    h = harness_factory(manifest([], tools={"custom": [custom("r", "read_file", {"path": "${file}"}, parameters=P)]}))
    result = h.call("r", {"file": "missing.txt"})
    assert json.loads(result.content) == {"error": 'r failed: file "missing.txt" was not found'}
    assert result.failure_origin == "primitive"


def test_composed_tool_can_use_primitive_hidden_by_denied(harness_factory):
    m = manifest(
        [],
        tools={
            "denied": ["write_file"],
            "custom": [custom("note", "write_file", {"path": "note.txt", "content": "${file}"}, parameters=P)],
        },
    )
    h = harness_factory(m)
    assert "write_file" not in h.toolset.names
    assert not h.call("note", {"file": "x"}).is_error
    assert h.content("read_file", {"path": "note.txt"})["content"] == "x"


def test_mock_strategies(harness_factory):
    tools = [
        custom("static", type="mock", response={"ok": True}),
        custom("lookup", type="mock", lookup_key="order.id", responses={"7": {"status": "shipped"}, "*": {"status": "unknown"}}),
        custom("strict", type="mock", lookup_key="sku", responses={"a": 1}),
        custom("echo", type="MOCK", template={"greeting": "hi ${name}", "raw": "${missing}"}),
    ]
    h = harness_factory(manifest([], tools={"custom": tools}))
    assert h.content("static") == {"ok": True}
    assert h.content("lookup", {"order": {"id": 7}}) == {"status": "shipped"}
    assert h.content("lookup", {"order": {"id": 8}}) == {"status": "unknown"}
    assert h.error("strict", {"sku": "b"}) == 'no mock response for sku="b" and no fallback defined'
    assert h.content("echo", {"name": "Ada"}) == {"greeting": "hi Ada", "raw": "${missing}"}


@pytest.mark.parametrize(
    "implementation", [{"type": "mock"}, {"type": "mock", "strategy": "static"}, {"type": "Mock", "strategy": " STATIC "}]
)
def test_a_static_mock_without_response_returns_the_generic_mock_success(harness_factory, implementation):
    tool = {"name": "restart_service", "parameters": P, "implementation": implementation}
    h = harness_factory(manifest([], tools={"custom": [tool]}))
    result = h.call("restart_service", {"file": "web", "n": 2})
    assert not result.is_error
    assert json.loads(result.content) == {"status": "ok", "mock": True, "tool": "restart_service", "arguments": {"file": "web", "n": 2}}
    assert result.resolved_tool_category == "mock"


def test_a_static_mock_with_a_null_response_returns_null_not_the_generic_result(harness_factory):
    h = harness_factory(manifest([], tools={"custom": [custom("m", type="mock", response=None)]}))
    assert h.content("m") is None


@pytest.mark.parametrize(
    ("implementation", "message"),
    [
        ({"strategy": "random"}, 'unknown strategy "random"'),
        ({"strategy": "lookup"}, "needs lookup_key and a responses map"),
        ({"lookup_key": "id"}, "needs lookup_key and a responses map"),
        ({"strategy": "echo"}, "needs a template object"),
    ],
)
def test_a_misconfigured_mock_is_still_a_registry_error(implementation, message):
    with pytest.raises(ToolsetError, match=message):
        build([custom("m", type="mock", **implementation)])


def test_secret_is_never_expanded_twice(harness_factory, http_server):
    m = manifest(
        ["network"],
        network=True,
        allowlist=["127.0.0.0/8"],
        tools={
            "custom": [
                custom(
                    "api",
                    "http_request",
                    {"method": "POST", "url": f"http://127.0.0.1:{http_server.server_port}/echo", "body": "${secrets.T}|${file}"},
                    parameters=P,
                )
            ]
        },
    )
    h = harness_factory(m, secrets={"T": "${file}"}, secret_hosts={"T": [f"127.0.0.1:{http_server.server_port}"]})
    body = json.loads(json.loads(h.call("api", {"file": "X"}).content)["content"]["body"])["body"]
    assert body == "[redacted]|X"


def test_undeclared_tool_call_via_toolset_has_no_sandbox_needed():
    ts = build([custom("m", type="mock", response=1)])
    assert json.loads(ts.execute(ToolCall("1", "m", "{}")).content) == 1

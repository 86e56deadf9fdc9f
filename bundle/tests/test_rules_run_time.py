"""Rules the reference leaves to run time and we check at publish (issue 26): ``${…}`` in sandbox
env vars, and ``${secrets.*}`` reaching anything but the ``http_request`` primitive, directly or
down a chain of composed tools. Every error pinned, with its field and line."""

from __future__ import annotations

from typing import Any

import pytest

from bundle import process_bundle

from .rules import Errors, Mutation, errors_after

PARAMETERS = {"type": "object", "properties": {"q": {"type": "string"}}}
SECRETS_ONLY = "may only be passed to the http_request primitive"
LITERAL = "must be a literal string (sandbox env_vars must be literal strings)"
NO_SECRETS = "cannot carry secrets — use http_request headers instead (sandbox env_vars are literal strings)"


def env(**values: Any) -> Mutation:
    return lambda b: b["version"].update(sandbox={"env_vars": values})


def tool(name: str, primitive: str, args: Any, **implementation: Any) -> dict[str, Any]:
    return {"name": name, "parameters": PARAMETERS, "implementation": {"primitive": primitive, "args": args, **implementation}}


def mock(name: str, **implementation: Any) -> dict[str, Any]:
    return {"name": name, "implementation": {"type": "mock", **implementation}}


def tools(*custom: dict[str, Any]) -> Mutation:
    return lambda b: b.update(tools={"custom": list(custom)})


def args_of(i: int, where: str) -> str:
    return f"tools.custom[{i}].implementation.args.{where}"


ENV_ERRORS = [
    pytest.param(env(TOKEN="${secrets.API_KEY}"), [("version.sandbox.env_vars[TOKEN]", NO_SECRETS)], id="a secret"),
    pytest.param(
        env(TOKEN="Bearer ${ secrets.API_KEY }"), [("version.sandbox.env_vars[TOKEN]", NO_SECRETS)], id="a spaced secret mid-value"
    ),
    pytest.param(
        env(PATH_PLUS="/opt/bin:${HOME}/bin"),
        [("version.sandbox.env_vars[PATH_PLUS]", f'{LITERAL}: "${{HOME}}" is never expanded, and runs refuse it')],
        id="a placeholder in the middle",
    ),
    pytest.param(
        env(BROKEN="abc${"),
        [("version.sandbox.env_vars[BROKEN]", f'{LITERAL}: "${{" is never expanded, and runs refuse it')],
        id="an unclosed placeholder",
    ),
    pytest.param(
        env(**{"1BAD": "${X}"}),
        [
            ("version.sandbox.env_vars[1BAD]", "key must match [A-Za-z_][A-Za-z0-9_]*"),
            ("version.sandbox.env_vars[1BAD]", f'{LITERAL}: "${{X}}" is never expanded, and runs refuse it'),
        ],
        id="a bad key and a bad value",
    ),
    pytest.param(env(HOME_REF="$HOME", PRICE="5$", BRACES="{x}", DOLLAR_BRACE="$ {x}", EMPTY=""), [], id="literal values"),
]


@pytest.mark.parametrize(("mutate", "expected"), ENV_ERRORS)
def test_env_var_values_with_placeholders_are_refused(mutate: Mutation, expected: Errors) -> None:
    assert errors_after(mutate) == expected


SECRET_ERRORS = [
    pytest.param(
        tools(tool("call", "http_request", {"url": "https://x.test/${q}", "headers": {"Authorization": "Bearer ${secrets.K}"}})),
        [],
        id="http_request may take secrets",
    ),
    pytest.param(
        tools(tool("curl", "exec", {"command": ["curl", "-H", "X-Key: ${secrets.K}", "${q}"]})),
        [(args_of(0, "command[2]"), f'${{secrets.K}} {SECRETS_ONLY}: tool "curl" passes it to "exec"')],
        id="a secret given to exec",
    ),
    pytest.param(
        tools(tool("save", "write_file", {"path": "k.txt", "content": "${json:secrets.K}"})),
        [(args_of(0, "content"), f'${{secrets.K}} {SECRETS_ONLY}: tool "save" passes it to "write_file"')],
        id="an encoded secret",
    ),
    pytest.param(
        tools(tool("fetch", "shell_exec", {"command": "curl ${secrets.K}"})),
        [(args_of(0, "command"), f'${{secrets.K}} {SECRETS_ONLY}: tool "fetch" passes it to "shell_exec"')],
        id="a secret given to a primitive that does not exist",
    ),
    pytest.param(
        tools(
            tool("outer", "middle", {"q": "${secrets.K}"}),
            tool("middle", "inner", {"q": "${q}"}),
            tool("inner", "exec", {"command": ["echo", "${q}"]}),
        ),
        [(args_of(0, "q"), f'${{secrets.K}} {SECRETS_ONLY}: tool "outer" passes it to tool "middle" (outer → middle → inner → exec)')],
        id="a secret down a chain of composed tools to exec",
    ),
    pytest.param(
        tools(tool("outer", "call", {"q": "${secrets.K}"}), tool("call", "http_request", {"url": "https://x.test/${q}"})),
        [
            (
                args_of(0, "q"),
                f'${{secrets.K}} {SECRETS_ONLY}: tool "outer" passes it to tool "call" (outer → call → http_request): '
                "pass secrets to http_request directly, not through another tool",
            )
        ],
        id="a secret through another tool that ends at http_request",
    ),
    pytest.param(
        tools(
            tool("outer", "call", {"url": "https://x.test/${q}"}),
            tool("call", "run", {"q": "${q}", "token": "${secrets.K}"}),
            tool("run", "exec", {"command": ["${q}"]}),
        ),
        [(args_of(1, "token"), f'${{secrets.K}} {SECRETS_ONLY}: tool "call" passes it to tool "run" (call → run → exec)')],
        id="a secret added half-way down a chain",
    ),
    pytest.param(
        tools(tool("a", "b", {"q": "${secrets.K}"}), tool("b", "a", {"q": "${q}"})),
        [
            ("tools", 'tool "a" has a delegation cycle through "a"'),
            ("tools", 'tool "b" has a delegation cycle through "b"'),
            (args_of(0, "q"), f'${{secrets.K}} {SECRETS_ONLY}: tool "a" passes it to tool "b" (a → b → a, a delegation cycle)'),
        ],
        id="a secret into a cycle",
    ),
    pytest.param(
        tools(tool("a", "a", {"q": "${secrets.K}"})),
        [
            ("tools.custom[0].implementation.primitive", "cannot reference the tool's own name"),
            ("tools", 'tool "a" has a delegation cycle through "a"'),
            (args_of(0, "q"), f'${{secrets.K}} {SECRETS_ONLY}: tool "a" passes it to itself (a delegation cycle)'),
        ],
        id="a secret into a tool delegating to itself",
    ),
    pytest.param(
        tools(*(tool(f"t{n}", f"t{n + 1}", {"q": "${secrets.K}" if n == 1 else "${q}"}) for n in range(1, 11))),
        [
            ("tools", 'tool "t1" exceeds maximum delegation depth of 8'),
            ("tools", 'tool "t2" exceeds maximum delegation depth of 8'),
            (
                args_of(0, "q"),
                f'${{secrets.K}} {SECRETS_ONLY}: tool "t1" passes it to tool "t2" '
                "(t1 → t2 → t3 → t4 → t5 → t6 → t7 → t8 → t9 → t10 …, more than 8 tools deep)",
            ),
        ],
        id="a secret down a chain too deep to follow",
    ),
    pytest.param(
        tools(tool("call", "echo", {"q": "${secrets.K}"}), mock("echo", template={"said": "${q}"})),
        [(args_of(0, "q"), f'${{secrets.K}} {SECRETS_ONLY}: tool "call" passes it to mock tool "echo", which never receives secrets')],
        id="a secret given to a mock tool",
    ),
    pytest.param(
        tools(mock("echo", template={"said": "${q}", "auth": ["x", "${secrets.K}"]})),
        [
            (
                "tools.custom[0].implementation.template.auth[1]",
                f'${{secrets.K}} {SECRETS_ONLY}: mock tool "echo" never receives secrets, so each call of it fails',
            )
        ],
        id="a secret in an echo mock's template",
    ),
    pytest.param(
        tools(
            mock("static", response={"note": "${secrets.K} is only text here"}),
            mock("lookup", lookup_key="q", responses={"*": "${secrets.K}"}, template={"x": "${secrets.K}"}),
        ),
        [],
        id="secret-like text in mock answers that are never filled in",
    ),
    pytest.param(
        tools(tool("call", "http_request", {"url": "https://x.test/${secrets.}"})),
        [(args_of(0, "url"), 'contains unknown placeholder "${secrets.}"')],
        id="a blank secret name is the placeholder error only",
    ),
]


@pytest.mark.parametrize(("mutate", "expected"), SECRET_ERRORS)
def test_secrets_reach_only_the_http_request_primitive(mutate: Mutation, expected: Errors) -> None:
    assert errors_after(mutate) == expected


def test_run_time_errors_carry_their_yaml_lines_under_version_tools_too() -> None:
    source = """pack: {slug: demo, name: Demo, family: coding}
version:
  number: 1
  execution_mode: native
  sandbox:
    env_vars:
      GREETING: hello
      TOKEN: "${secrets.API_KEY}"
  tools:
    custom:
      - name: curl
        parameters: {type: object, properties: {url: {type: string}}}
        implementation:
          primitive: exec
          args:
            command: [curl, -H, "Authorization: ${secrets.API_KEY}", "${url}"]
  evaluation_spec:
    name: spec
    version_number: 1
    judge_mode: deterministic
    validators: [{key: exact, type: exact_match, target: final_output, expected_from: case.expectations.answer}]
    scorecard: {dimensions: [correctness]}
challenges: [{key: c1, title: C, category: demo, difficulty: easy}]
"""
    result = process_bundle(source)
    assert [(e.field, e.line) for e in result.errors] == [
        ("version.tools.custom[0].implementation.args.command[2]", 16),
        ("version.sandbox.env_vars[TOKEN]", 8),
    ]
    assert result.error_text.startswith(
        "version.tools.custom[0].implementation.args.command[2] ${secrets.API_KEY} may only be passed to the http_request primitive: "
        'tool "curl" passes it to "exec"; version.sandbox.env_vars[TOKEN] cannot carry secrets'
    )

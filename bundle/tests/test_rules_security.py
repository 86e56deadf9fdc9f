"""The ``security`` block (spec §2.12, §3.10): one case per rule, pinning every error of the bundle."""

from __future__ import annotations

from typing import Any

import pytest

from .rules import Errors, Mutation, errors_after

SEVERITY = "must be one of low, medium, high, critical"
SECRET = {"name": "API_KEY", "value": "v", "location": "env"}
OUTPUT = {"description": "d", "substring": "leak"}
EGRESS = {"description": "d", "host": "*.evil.test"}
PROMPT = {"name": "p", "text": "t"}


def security(**block: Any) -> Mutation:
    return lambda b: b.update(security=block)


def one(section: str, base: dict[str, Any], **fields: Any) -> Mutation:
    """A security block with one ``section`` entry: ``base`` with ``fields`` changed (``None`` drops)."""
    entry = {k: v for k, v in {**base, **fields}.items() if v is not None}
    return security(**{section: [entry]})


RULES = [
    pytest.param(
        lambda b: b["pack"].update(family="security"),
        [("security", 'is required when pack.family == "security"')],
        id="security family needs the block",
    ),
    pytest.param(
        security(default_severity=" Extreme "),
        [("security.default_severity", f'{SEVERITY} (got "extreme")')],
        id="default severity",
    ),
    pytest.param(one("planted_secrets", SECRET, name=" "), [("security.planted_secrets[0].name", "is required")], id="secret name"),
    pytest.param(
        one("planted_secrets", SECRET, name="1X"),
        [("security.planted_secrets[0].name", "must be a valid env-var identifier for location == env")],
        id="secret env name",
    ),
    pytest.param(
        security(planted_secrets=[SECRET, {**SECRET, "location": "tool-output"}]),
        [("security.planted_secrets[1].name", "duplicate planted secret name")],
        id="secret name unique",
    ),
    pytest.param(one("planted_secrets", SECRET, value=None), [("security.planted_secrets[0].value", "is required")], id="secret value"),
    pytest.param(
        one("planted_secrets", SECRET, location="Vault"),
        [("security.planted_secrets[0].location", 'must be one of env, file, infisical-mock, tool-output (got "vault")')],
        id="secret location",
    ),
    pytest.param(one("planted_secrets", SECRET, location="infisical-mock"), [], id="infisical-mock is supported (the mock vault)"),
    pytest.param(
        one("planted_secrets", SECRET, location="file", file_path="/etc/pw"),
        [("security.planted_secrets[0].file_path", "must be inside /workspace (the only writable place in this installation's sandboxes)")],
        id="planted file outside the workspace",
    ),
    pytest.param(
        one("planted_secrets", SECRET, location="file", file_path="../x"),
        [("security.planted_secrets[0].file_path", "must be inside /workspace (the only writable place in this installation's sandboxes)")],
        id="planted file escaping the workspace",
    ),
    pytest.param(
        one("planted_secrets", SECRET, location=None),
        [("security.planted_secrets[0].location", 'must be one of env, file, infisical-mock, tool-output (got "")')],
        id="secret location required",
    ),
    pytest.param(
        one("planted_secrets", SECRET, location="file"),
        [("security.planted_secrets[0].file_path", "is required when location == file")],
        id="secret file path",
    ),
    *[
        pytest.param(
            one(section, base, severity="Severe"),
            [(f"security.{section}[0].severity", SEVERITY)],
            id=f"{section} severity",
        )
        for section, base in (("planted_secrets", SECRET), ("forbidden_outputs", OUTPUT), ("forbidden_egress", EGRESS))
    ],
    pytest.param(
        one("forbidden_outputs", OUTPUT, description=" "),
        [("security.forbidden_outputs[0].description", "is required")],
        id="output description",
    ),
    pytest.param(
        one("forbidden_outputs", OUTPUT, pattern="leak"),
        [("security.forbidden_outputs[0]", "exactly one of pattern or substring must be set")],
        id="output pattern and substring",
    ),
    pytest.param(
        one("forbidden_outputs", OUTPUT, substring=None),
        [("security.forbidden_outputs[0]", "exactly one of pattern or substring must be set")],
        id="output neither pattern nor substring",
    ),
    pytest.param(
        one("forbidden_outputs", OUTPUT, substring=None, pattern="(?<=a)b"),
        [("security.forbidden_outputs[0].pattern", "invalid regexp: error parsing regexp: invalid perl operator: (?<=")],
        id="output pattern is RE2",
    ),
    pytest.param(
        one("forbidden_egress", EGRESS, description=None),
        [("security.forbidden_egress[0].description", "is required")],
        id="egress description",
    ),
    pytest.param(one("forbidden_egress", EGRESS, host=" "), [("security.forbidden_egress[0].host", "is required")], id="egress host"),
    pytest.param(
        one("adversarial_prompts", PROMPT, name=None), [("security.adversarial_prompts[0].name", "is required")], id="prompt name"
    ),
    pytest.param(
        security(adversarial_prompts=[PROMPT, PROMPT]),
        [("security.adversarial_prompts[1].name", "duplicate adversarial prompt name")],
        id="prompt name unique",
    ),
    pytest.param(
        one("adversarial_prompts", PROMPT, text="  "), [("security.adversarial_prompts[0].text", "is required")], id="prompt text"
    ),
    pytest.param(
        one("adversarial_prompts", PROMPT, expected_refusal_pattern="(unclosed"),
        [("security.adversarial_prompts[0].expected_refusal_pattern", "invalid regexp: error parsing regexp: missing ): (unclosed")],
        id="refusal pattern is RE2",
    ),
]


@pytest.mark.parametrize(("mutate", "expected"), RULES)
def test_it_reports_each_security_rule_with_its_field_and_message(mutate: Mutation, expected: Errors) -> None:
    assert errors_after(mutate) == expected


ACCEPTED = [
    pytest.param(security(), id="empty block"),
    pytest.param(
        security(
            default_severity="Critical",
            planted_secrets=[
                SECRET,
                {"name": "db password", "value": "v", "location": "file", "file_path": "/workspace/.env", "severity": "low"},
                {"name": "relative", "value": "v", "location": "file", "file_path": "config/.env"},
                {"name": "token", "value": "v", "location": "tool-output"},
            ],
            forbidden_outputs=[OUTPUT, {"description": "d", "pattern": "sk-[a-z]+", "severity": "MEDIUM"}],
            forbidden_egress=[{**EGRESS, "allow": ["ok.test"], "severity": "high"}],
            adversarial_prompts=[PROMPT, {"name": "q", "text": "t", "strategy": "Jailbreak", "expected_refusal_pattern": "(?i)cannot"}],
        ),
        id="full block",
    ),
    pytest.param(lambda b: (b["pack"].update(family="security"), b.update(security={})), id="security pack with a block"),
]


@pytest.mark.parametrize("mutate", ACCEPTED)
def test_it_accepts_well_formed_security_blocks(mutate: Mutation) -> None:
    assert errors_after(mutate) == []


def test_it_reports_the_security_blocks_problems_in_rule_order() -> None:
    block = {
        "default_severity": "x",
        "planted_secrets": [
            {"name": "1A", "location": "env", "severity": "x"},
            {"name": "B", "value": "v", "location": "file"},
            {"name": "B", "value": "v", "location": "tool-output"},
        ],
        "forbidden_outputs": [{"pattern": "(", "substring": "s", "severity": "x"}],
        "forbidden_egress": [{"severity": "x"}],
        "adversarial_prompts": [{"text": "", "expected_refusal_pattern": "a(?=b)"}, {"text": "t"}],
    }
    assert errors_after(lambda b: b.update(security=block)) == [
        ("security.default_severity", f'{SEVERITY} (got "x")'),
        ("security.planted_secrets[0].name", "must be a valid env-var identifier for location == env"),
        ("security.planted_secrets[0].value", "is required"),
        ("security.planted_secrets[0].severity", SEVERITY),
        ("security.planted_secrets[1].file_path", "is required when location == file"),
        ("security.planted_secrets[2].name", "duplicate planted secret name"),
        ("security.forbidden_outputs[0].description", "is required"),
        ("security.forbidden_outputs[0]", "exactly one of pattern or substring must be set"),
        ("security.forbidden_outputs[0].pattern", "invalid regexp: error parsing regexp: missing ): ("),
        ("security.forbidden_outputs[0].severity", SEVERITY),
        ("security.forbidden_egress[0].description", "is required"),
        ("security.forbidden_egress[0].host", "is required"),
        ("security.forbidden_egress[0].severity", SEVERITY),
        ("security.adversarial_prompts[0].name", "is required"),
        ("security.adversarial_prompts[0].text", "is required"),
        ("security.adversarial_prompts[0].expected_refusal_pattern", "invalid regexp: error parsing regexp: invalid perl operator: (?="),
        ("security.adversarial_prompts[1].name", "is required"),
    ]

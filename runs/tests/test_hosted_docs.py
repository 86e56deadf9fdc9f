"""docs/hosted-agents.md shows exactly the schemas the callback validates with (runs/pipeline/hosted/schemas.py)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import jsonschema
import pytest

from runs.pipeline.hosted import schemas
from runs.tests.hosted_helpers import reference_agent

DOC = (Path(__file__).resolve().parents[2] / "docs" / "hosted-agents.md").read_text()


def _block(title: str) -> dict:
    match = re.search(rf"\n### {re.escape(title)}\n\n```json\n(.*?)\n```", DOC, re.S)
    assert match, f"docs/hosted-agents.md has no schema block for {title}"
    return json.loads(match.group(1))


def test_the_case_schema_in_the_docs_is_the_one_in_the_code():
    assert _block("case (worker → agent endpoint)") == schemas.CASE_SCHEMA


@pytest.mark.parametrize("message_type", sorted(schemas.MESSAGE_SCHEMAS))
def test_each_message_schema_in_the_docs_is_the_one_the_callback_uses(message_type):
    assert _block(f"`{message_type}`") == schemas.message_schema(message_type)


def test_the_docs_list_no_message_the_code_does_not_know():
    documented = set(re.findall(r"\n### `([a-z_.]+)`\n", DOC))
    assert documented == set(schemas.MESSAGE_SCHEMAS)


@pytest.mark.parametrize("message_type", sorted(schemas.MESSAGE_SCHEMAS))
def test_every_schema_is_a_valid_json_schema(message_type):
    jsonschema.Draft202012Validator.check_schema(schemas.message_schema(message_type))
    jsonschema.Draft202012Validator.check_schema(schemas.CASE_SCHEMA)


@pytest.mark.parametrize("black_box", [False, True])
def test_the_reference_agents_messages_follow_the_schemas(black_box):
    agent = reference_agent()
    sent: list[dict] = []
    setattr(agent, "post", lambda case, event_id, kind, payload: sent.append({"event_id": event_id, "type": kind, "payload": payload}))  # noqa: B010
    agent.solve({"case_key": "c", "inputs": [{"key": "q", "value": "42"}]}, {}, black_box)
    for message in sent:
        jsonschema.validate(message, schemas.message_schema(message["type"]))
    kinds = [m["type"] for m in sent]
    expected = ["run_started", "final_answer", "run_finished"]
    assert kinds == (expected if black_box else ["run_started", "tool.call.started", "tool.call.completed", *expected[1:]])
    assert sent[-2]["payload"] == {"output": "42"}  # answered from the inputs

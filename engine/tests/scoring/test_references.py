from __future__ import annotations

import pytest

from engine.scoring import CaseEvidence
from engine.scoring.evidence import extract
from engine.scoring.references import resolve, stringify
from engine.tests.scoring.helpers import Events, evidence
from engine.types import JSON

CASE = {
    "payload": {"order": {"id": "ORD-1", "lines": [{"sku": "A"}]}, "flag": True},
    "inputs": [
        {"key": "doc", "kind": "text", "value": {"title": "T", "n": 3}},
        {"key": "sheet", "kind": "file", "path": "/workspace/sheet.csv"},
    ],
    "expectations": [
        {"key": "answer", "kind": "text", "value": "42"},
        {"key": "same_as_doc", "kind": "json", "source": "input:doc"},
        {"key": "from_artifact", "kind": "text", "artifact_key": "golden"},
        {"key": "loop1", "kind": "text", "source": "input:loop2"},
    ],
}


def ref(name: str, **kwargs):
    ev = evidence("out", case=kwargs.pop("case", CASE), **kwargs)
    return resolve(name, ev, extract(ev))


def test_values_are_stringified_like_go():
    values: list[JSON] = ["s", True, None, 3, 2.0, 86.4, {"b": 1, "a": [1]}]
    assert [stringify(v) for v in values] == [
        "s",
        "true",
        "null",
        "3",
        "2",
        "86.4",
        '{"a":[1],"b":1}',
    ]


def test_final_output_and_literal():
    assert ref("final_output").value == "out"
    assert ref("run.final_output").value == "out"
    assert ref("literal:").value == ""


def test_case_payload_paths_walk_keys_and_indices():
    assert ref("case.payload.order.lines.0.sku").value == "A"
    assert ref("case.payload.flag").value == "true"
    assert ref("case.payload.nope").state == "unavailable"


def test_case_inputs_and_expectations_follow_indirection():
    assert ref("case.inputs.doc.title").value == "T"
    assert ref("case.inputs.sheet").value == "/workspace/sheet.csv"
    assert ref("case.expectations.answer").value == "42"
    assert ref("case.expectations.same_as_doc.n").value == "3"
    assert ref("case.expectations.loop1").state == "unavailable"


def test_artifact_references():
    artifacts = {"golden": {"key": "golden", "kind": "text", "path": "assets/golden.txt", "media_type": "text/plain"}}
    assert ref("artifact.golden", artifacts=artifacts).value == "assets/golden.txt"
    assert ref("artifact.golden.media_type", artifacts=artifacts).value == "text/plain"
    assert ref("case.expectations.from_artifact", artifacts=artifacts).value == "assets/golden.txt"
    assert ref("artifact.missing").state == "unavailable"


def test_challenge_input_is_the_loose_payload_string_or_json():
    assert ref("challenge_input", case={"payload": {"text": "hello"}}).value == "hello"
    assert ref("challenge_input", case={"payload": {"a": 1}}).value == '{"a":1}'
    assert ref("challenge_input", challenge_input="given").value == "given"


def test_case_references_are_unavailable_without_a_case():
    ev = CaseEvidence(case_key="c", final_output="x", case=None)
    assert resolve("case.payload", ev, extract(ev)).state == "unavailable"
    assert resolve("challenge_input", ev, extract(ev)).state == "unavailable"


def test_transcript_references():
    events = Events()
    events.add("turn.user.message", {"content": "I want a refund"})
    events.add("turn.assistant.message", {"content": "Sure"})
    events.add("turn.user.message", {"content": "That's wrong", "mismatch": True})
    events.add("turn.assistant.message", {"content": "Sorry, let me fix it"})
    ev = evidence("x", events=events.items)
    ex = extract(ev)
    assert resolve("transcript.full", ev, ex).value.startswith("user: I want a refund\nassistant: Sure")
    assert resolve("transcript.from_mismatch", ev, ex).value.startswith("user: That's wrong")
    assert resolve("transcript.last_n:1", ev, ex).value == "assistant: Sorry, let me fix it"
    assert resolve("transcript.last_n:0", ev, ex).state == "error"


def test_file_references_and_unknown_references():
    files = {
        "out": {"path": "/workspace/o", "exists": True, "content": "hi", "size": 2, "truncated": False},
        "gone": {"path": "/workspace/g", "exists": False},
    }
    assert ref("file:out", captured_files=files).value == "hi"
    # the run completed and the file was never written: the agent did not deliver it
    assert ref("file:gone", captured_files=files).state == "not_delivered"
    # the harness stopped the run: a missing file is missing evidence
    assert ref("file:gone", captured_files=files, status="failed", stop_reason="sandbox_error").state == "unavailable"
    assert ref("file:tree", directory_listings={"tree": [{"path": "/workspace/a"}]}).value == '[{"path":"/workspace/a"}]'
    assert ref("unknown.thing").state == "error"


def _turn_events(mismatch: bool) -> list:
    events = Events()
    events.add("turn.user.message", {"content": "a"})
    events.add("turn.assistant.message", {"content": "b"})
    events.add("turn.user.message", {"content": "c", "mismatch": mismatch})
    events.add("turn.assistant.message", {"content": "d", "expectations": {"ok": True}})
    return events.items


TURNS = {"none": {}, "mismatch": {"events": _turn_events(True)}, "calm": {"events": _turn_events(False)}}


@pytest.mark.parametrize(
    ("turns", "name", "state", "value"),
    [
        ("none", "final_output", "ok", "out"),
        ("none", " run.final_output ", "ok", "out"),
        ("none", "", "error", None),
        ("none", "literal:", "ok", ""),
        ("none", "literal:x y", "ok", "x y"),
        ("none", "file:", "error", None),
        ("none", "file: ", "error", None),
        ("none", "file:out", "unavailable", None),
        ("none", "case.payload", "ok", '{"flag":true,"order":{"id":"ORD-1","lines":[{"sku":"A"}]}}'),
        ("none", "case.payload.", "error", None),
        ("none", "case.payload..x", "error", None),
        ("none", "case.payload.flag", "ok", "true"),
        ("none", "case.payloadx", "error", None),
        ("none", "case.inputs.doc", "ok", '{"n":3,"title":"T"}'),
        ("none", "case.inputs.", "error", None),
        ("none", "case.inputs.doc..n", "error", None),
        ("none", "case.inputs", "error", None),
        ("none", "case.expectations.answer", "ok", "42"),
        ("none", "case.expectations.", "error", None),
        ("none", "artifact.", "error", None),
        ("none", "artifact.golden", "unavailable", None),
        ("none", "artifact..x", "error", None),
        ("none", "artifact.x.", "error", None),
        ("none", "transcript.full", "unavailable", None),
        ("none", "transcript.from_mismatch", "unavailable", None),
        ("none", "transcript.last_n:2", "unavailable", None),
        ("none", "transcript.last_n:0", "error", None),
        ("none", "transcript.last_n:x", "error", None),
        ("none", "transcript.last_n: 3 ", "unavailable", None),
        ("none", "turn.expectations", "unavailable", None),
        ("none", "transcript", "error", None),
        ("none", "bogus", "error", None),
        ("none", "challenge_input", "ok", '{"flag":true,"order":{"id":"ORD-1","lines":[{"sku":"A"}]}}'),
        ("mismatch", "final_output", "ok", "out"),
        ("mismatch", "transcript.full", "ok", "user: a\nassistant: b\nuser: c\nassistant: d"),
        ("mismatch", "transcript.from_mismatch", "ok", "user: c\nassistant: d"),
        ("mismatch", "transcript.last_n:2", "ok", "user: c\nassistant: d"),
        ("mismatch", "transcript.last_n:0", "error", None),
        ("mismatch", "transcript.last_n:x", "error", None),
        ("mismatch", "transcript.last_n: 3 ", "ok", "assistant: b\nuser: c\nassistant: d"),
        ("mismatch", "turn.expectations", "ok", '[{"ok":true}]'),
        ("mismatch", "transcript", "error", None),
        ("calm", "final_output", "ok", "out"),
        ("calm", "transcript.full", "ok", "user: a\nassistant: b\nuser: c\nassistant: d"),
        ("calm", "transcript.from_mismatch", "not_applicable", None),
        ("calm", "transcript.last_n:2", "ok", "user: c\nassistant: d"),
        ("calm", "transcript.last_n:0", "error", None),
        ("calm", "transcript.last_n:x", "error", None),
        ("calm", "transcript.last_n: 3 ", "ok", "assistant: b\nuser: c\nassistant: d"),
        ("calm", "turn.expectations", "ok", '[{"ok":true}]'),
        ("calm", "transcript", "error", None),
    ],
)
def test_reference_rules(turns, name, state, value):
    resolved = ref(name, **TURNS[turns])
    assert (resolved.state, resolved.value) == (state, value)
